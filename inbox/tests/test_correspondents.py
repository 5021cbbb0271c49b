"""Inbound senders are inbox correspondents, not marketing contacts (AGT-02 as docs/decisions.md amends it): a
new sender's contact (source `inbound`) is recorded and audited, but fires no `contact_created` trigger, no
`contact.created` webhook and no analytics event, and is subscribed to no topic."""

from __future__ import annotations

import pytest

from owlat.models import AuditLog, Contact, ContactActivity
from owlat.registry import trigger_listeners

pytestmark = pytest.mark.django_db


@pytest.fixture
def fired(monkeypatch):
    """The trigger kinds the kernel fires during the test (a listener that records them)."""
    from owlat import triggers

    seen: list[tuple[str, str]] = []

    def listener(event):
        seen.append((event.kind, event.contact_id))
        return []

    monkeypatch.setattr(triggers, "trigger_listeners", lambda: [*trigger_listeners(), listener])
    return seen


def test_a_new_sender_is_a_correspondent_that_fires_nothing(org, receive, fired, monkeypatch):
    from owlat import webhooks

    emitted: list[str] = []
    real_emit = webhooks.webhook_emit
    monkeypatch.setattr(
        webhooks, "webhook_emit", lambda **kw: emitted.append(kw["event_type"]) or real_emit(**kw)
    )
    r = receive(from_email="spammer@evil.example", from_name="Totally Legit")
    contact = Contact.objects.get(pk=r.message.contact_id)
    assert contact.source == "inbound" and contact.organization_id == org.pk
    assert not [k for k, cid in fired if k == "contact_created"]
    assert "contact.created" not in emitted
    assert not contact.topic_memberships.exists()
    audit = AuditLog.objects.get(
        organization_id=org.pk, action="contact.created", resource_id=str(contact.pk)
    )
    assert audit.details["source"] == "inbound" and audit.details["correspondent"] is True
    assert ContactActivity.objects.filter(contact=contact, activity_type="inbound_received").exists()


def test_a_welcome_automation_on_contact_created_never_mails_a_sender(org, receive, fired):
    receive(from_email="phisher@evil.example")
    receive(from_email="phisher@evil.example", subject="again")
    assert fired == [] or all(k != "contact_created" for k, _ in fired)


def test_an_existing_marketing_contact_stays_as_it_was(org, receive):
    from owlat.contacts import contact_find_or_create

    contact, _ = contact_find_or_create(
        organization_id=org.pk, email="jane@example.com", source="form", actor="test"
    )
    r = receive()
    assert r.message.contact_id == contact.pk
    contact.refresh_from_db()
    assert contact.source == "form"
