"""The contact page's one timeline (owlat.timeline): every registered source, newest first, one bounded page at a
time, a fixed number of queries whatever the history, and never a row of another organization."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from testsupport.api import make_org

pytestmark = pytest.mark.django_db
_n = itertools.count()


def _history(org, contact, *, label: str, size: int = 1) -> None:
    """`size` rows of every kind for `contact`, written in `org` (another organization's rows when they differ)."""
    from automations.models import Automation, AutomationRun, AutomationStepRun
    from delivery.models import EmailSend, TransactionalSend
    from inbox.models import InboundMessage
    from owlat.activities import activity_record
    from owlat.models import ContactTopic, Event, Topic

    now = timezone.now()
    automation = Automation.objects.create(
        organization=org, name=f"Flow {label}", trigger_type="contact_created"
    )
    for i in range(size):
        at = now - dt.timedelta(minutes=i + 1)
        n = next(_n)
        activity_record(
            organization_id=org.pk,
            contact_id=contact.pk,
            activity_type="imported",
            metadata={"fileName": f"{label}.csv", "outcome": "updated"},
            at=at,
        )
        Event.objects.create(
            id=f"evt_{label}{n}", organization=org, contact=contact, event_name=f"{label}_event"
        )
        topic = Topic.objects.create(organization=org, name=f"Topic {label} {n}")
        ContactTopic.objects.create(organization=org, contact=contact, topic=topic, consent_source="import")
        run = AutomationRun.objects.create(
            organization=org,
            automation=automation,
            contact=contact,
            status="completed",
            started_at=at,
            triggered_by="contact_created",
        )
        AutomationStepRun.objects.create(
            organization=org, run=run, step_index=0, step_type="email", status="completed", scheduled_at=at
        )
        EmailSend.objects.create(
            organization=org,
            campaign_id=uuid.uuid4(),  # any id: the timeline links it by URL name
            contact=contact,
            contact_email=contact.email,
            personalized_subject=f"Campaign {label} {n}",
            status="bounced",
            bounce_type="hard",
            queued_at=at,
        )
        TransactionalSend.objects.create(
            organization=org,
            kind="automation",
            contact=contact,
            email=contact.email,
            subject=f"Automation mail {label} {n}",
            status="sent",
            queued_at=at,
        )
        TransactionalSend.objects.create(
            organization=org,
            kind="test",
            contact=contact,
            email=contact.email,
            subject=f"TEST {label}",
            queued_at=at,
        )
        InboundMessage.objects.create(
            organization=org,
            message_id=f"<{label}{n}@example.com>",
            from_email=contact.email,
            subject=f"Question {label} {n}",
            contact=contact,
            received_at=at,
        )


@pytest.fixture
def org():
    return make_org("Timeline A")


@pytest.fixture
def world(org):
    from owlat.contacts import contact_find_or_create

    other = make_org("Timeline B")
    contact, _ = contact_find_or_create(
        organization_id=org.pk, email="tia@example.com", source="api", actor="test"
    )
    theirs, _ = contact_find_or_create(
        organization_id=other.pk, email="tia@example.com", source="api", actor="test"
    )
    return {"org": org, "other": other, "contact": contact, "theirs": theirs}


def test_every_kind_of_row_is_on_one_timeline_newest_first(world):
    from owlat.timeline import contact_timeline

    _history(world["org"], world["contact"], label="mine")
    page = contact_timeline(world["contact"])
    kinds = {row.kind for row in page.rows}
    assert kinds == {"activity", "import", "event", "subscription", "automation", "step", "send", "inbox"}
    whens = [row.when for row in page.rows]
    assert whens == sorted(whens, reverse=True)
    titles = " | ".join(row.title for row in page.rows)
    assert "Entered automation “Flow mine”" in titles and "Mail received “Question mine" in titles
    assert "TEST mine" not in titles  # test sends are in no contact's history
    bounced = next(row for row in page.rows if row.title.startswith("Campaign mail"))
    assert bounced.outcome == "bounced · hard bounce"
    assert not any(row.title == "Email sent" for row in page.rows)  # the send rows tell it


def test_the_query_count_does_not_grow_with_the_history(world):
    from owlat.timeline import contact_timeline, timeline_sources

    _history(world["org"], world["contact"], label="small", size=1)
    with CaptureQueriesContext(connection) as small:
        contact_timeline(world["contact"])
    _history(world["org"], world["contact"], label="big", size=30)
    with CaptureQueriesContext(connection) as big:
        page = contact_timeline(world["contact"])
    assert len(small) == len(big) == len(timeline_sources())
    assert len(page.rows) == 50 and page.has_older


def test_another_organizations_rows_never_appear(world, client, staff_owner):
    from owlat.timeline import contact_timeline

    _history(world["org"], world["contact"], label="mine")
    # rows of the other organization, on its own contact and (a corrupt row) pointing at ours
    _history(world["other"], world["theirs"], label="theirs")
    _history(world["other"], world["contact"], label="leak")
    rows = contact_timeline(world["contact"], per_page=500).rows
    text = " ".join(f"{r.title} {r.detail} {r.outcome}" for r in rows)
    assert "mine" in text and "theirs" not in text and "leak" not in text
    html = client.get(reverse("admin:owlat_contact_change", args=[world["contact"].pk])).content.decode()
    assert "Flow mine" in html and "theirs" not in html and "leak" not in html


def test_the_contact_page_shows_a_bounded_timeline_first_and_pages_older_rows(world, client, staff_owner):
    import re

    _history(world["org"], world["contact"], label="paged", size=12)
    url = reverse("admin:owlat_contact_change", args=[world["contact"].pk])
    html = client.get(url).content.decode()
    timeline = html[html.index('id="contact-timeline"') :]
    assert html.index('id="contact-timeline"') < html.index('id="contact_form"')  # at the top of the page
    first = re.findall(r'data-kind="(\w+)"', timeline)
    assert len(first) == 50
    more = re.search(r'id="timeline-more"[^>]*href="([^"]+)"', timeline)
    assert more
    older = client.get(url + more.group(1).replace("&amp;", "&").split("#")[0]).content.decode()
    rest = re.findall(r'data-kind="(\w+)"', older[older.index('id="contact-timeline"') :])
    # 12 rows of each of the 8 kinds, and the contact's own `created`: nothing lost or shown twice between pages
    assert len(first) + len(rest) == 12 * 8 + 1 and 'id="timeline-more"' not in older
    bad = client.get(url, {"timeline_page": "x"}).content.decode()
    assert "timeline_page" in bad and "is not a page from 1 to 20" in bad
