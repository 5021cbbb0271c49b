"""The batch variant of the automation email step (automation_email_prepare_many) reads the batch's templates and
suppressed addresses once, filtered by the batch's organizations (the templates, on PostgreSQL, as a prepared
statement), and decides every request as the single variant does: another organization's template is not found, a
suppressed address (in any case) is skipped."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from delivery.services import AutomationEmailRequest, automation_email_prepare_many

pytestmark = pytest.mark.django_db


def test_the_batch_reads_decide_as_the_single_variant(org, other_org, template, make_contact, settings):
    from owlat.suppression import suppress
    from templates.models import EmailTemplate

    settings.EMAIL_PROVIDER = "local"
    foreign = EmailTemplate.objects.create(
        organization=other_org, name="x", subject="s", html_content="<p>x</p>"
    )
    plain, blocked = make_contact(email="p@example.com"), make_contact(email="b@example.com")
    suppress(organization_id=org.pk, email="B@example.com", reason="unengaged")
    suppress(
        organization_id=other_org.pk, email="p@example.com", reason="unengaged"
    )  # another organization's
    requests = [
        AutomationEmailRequest(str(org.pk), str(c.pk), str(uuid.uuid4()), str(t), contact=c)
        for c, t in [(plain, template.pk), (blocked, template.pk), (plain, foreign.pk), (plain, uuid.uuid4())]
    ]
    for _ in range(2):  # the second batch runs the same prepared statements again
        results = automation_email_prepare_many(requests)
        assert [(r.status, r.reason) for r in results] == [
            ("queued", None),
            ("skipped", "Recipient suppressed"),
            ("failed", "Email template not found"),
            ("failed", "Email template not found"),
        ]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements WHERE from_sql = false")
            prepared = [row[0] for row in cursor.fetchall()]
        assert any(
            '"templates_emailtemplate"' in s and "organization_id = ANY($2::uuid[])" in s for s in prepared
        )
