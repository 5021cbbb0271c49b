"""Small factories for the campaigns tests. History is set up through services and the lifecycle."""

from __future__ import annotations

import itertools

import pytest

from owlat.permissions import Authority
from testsupport.world import sending_organization

_counter = itertools.count()


@pytest.fixture
def local_provider(settings):
    """Delivery configured with the `local` provider (messages stored, nothing leaves the machine)."""
    settings.EMAIL_PROVIDER = "local"
    settings.SITE_URL = "http://testserver"
    return settings


@pytest.fixture
def org(db, local_provider):
    return sending_organization(
        "Acme", "acme.test", sender="news", sender_name="Acme News", postal_address="Acme Inc., 1 Main Street"
    )


@pytest.fixture
def template(org):
    from templates.models import EmailTemplate

    return EmailTemplate.objects.create(
        organization=org,
        name="Newsletter",
        subject="News for {{firstName|'you'}}",
        html_content='<html><body><p>Hello {{firstName}}</p><p><a href="https://example.org/post">Read</a></p>'
        "</body></html>",
        html_translations={
            "de": {"htmlContent": "<p>Hallo {{firstName}}</p>", "subject": "Neues für {{firstName}}"}
        },
    )


@pytest.fixture
def topic(org):
    from owlat.models import Topic

    return Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)


@pytest.fixture
def make_contact(org):
    from owlat.models import Contact, ContactTopic

    def make(email: str | None = "auto", *, topic=None, organization=None, pending=False, **fields):
        organization = organization or org
        if email == "auto":
            email = f"person{next(_counter)}@example.com"
        contact = Contact.objects.create(organization=organization, email=email, **fields)
        if topic is not None:
            ContactTopic.objects.create(
                organization=organization, contact=contact, topic=topic, pending_doi_confirmation=pending
            )
        return contact

    return make


@pytest.fixture
def make_campaign(org, template, topic):
    from campaigns.services import campaign_create

    def make(*, audience="topic", status="draft", organization=None, **fields):
        organization = organization or org
        if audience == "topic":
            audience = {"kind": "topic", "topicId": str(topic.pk)}
        values = {
            "name": f"Campaign {next(_counter)}",
            "email_template_id": template.pk,
            "from_email": "news@acme.test",
            "from_name": "Acme News",
            "audience": audience,
            **fields,
        }
        return campaign_create(
            organization_id=organization.pk, actor="user-1", fields=values, authority=Authority.system("test")
        )

    return make
