import datetime as dt

import pytest
from django.utils import timezone

from owlat.models import Contact, ContactActivity, ContactTopic, WebhookDelivery, WebhookEndpoint
from owlat.registry import (
    _doi_started_hooks,
    _trigger_listeners,
    register_doi_started_hook,
    register_trigger_listener,
)
from owlat.tests.factories import make_contact, make_org, make_topic
from owlat.topics import contact_unsubscribe_all, doi_attest, doi_confirm, topic_subscribe, topic_unsubscribe

pytestmark = pytest.mark.django_db


@pytest.fixture
def fired():
    events, dois = [], []

    def listener(event):
        events.append(event)
        return []

    def doi_hook(contact_id, topic_ids):
        dois.append((contact_id, topic_ids))

    register_trigger_listener(listener)
    register_doi_started_hook(doi_hook)
    yield events, dois
    _trigger_listeners.remove(listener)
    _doi_started_hooks.remove(doi_hook)


def test_subscribe_without_doi_fires_trigger_and_records_consent(fired):
    events, dois = fired
    org = make_org()
    topic = make_topic(org, doi=False)
    c = make_contact(org)
    events.clear()
    outcome = topic_subscribe(
        contact=c,
        topic=topic,
        source="public_api",
        actor="x",
        consent_ip="127.0.0.1",
        consent_user_agent="ua",
    )
    assert outcome == "subscribed"
    m = ContactTopic.objects.get(contact=c, topic=topic)
    assert (m.consent_source, m.consent_ip, m.consent_user_agent) == ("public_api", "127.0.0.1", "ua")
    assert m.consent_at is not None and not m.pending_doi_confirmation
    assert [(e.kind, e.data) for e in events] == [("topic_subscribed", {"topicId": str(topic.pk)})]
    assert dois == []
    assert topic_subscribe(contact=c, topic=topic, source="public_api", actor="x") == "already_member"
    topic.refresh_from_db()
    assert topic.cached_member_count == 1


def test_doi_topic_defers_trigger_until_confirmation(fired):
    events, dois = fired
    org = make_org()
    topic = make_topic(org, doi=True)
    c = make_contact(org)
    events.clear()
    assert topic_subscribe(contact=c, topic=topic, source="public_api", actor="x") == "pending_doi"
    c.refresh_from_db()
    assert c.doi_status == "pending" and c.doi_confirmation_token
    assert dois == [(str(c.pk), [str(topic.pk)])]
    assert events == []
    assert doi_confirm(token="wrong") == "invalid"
    assert doi_confirm(token=c.doi_confirmation_token) == "confirmed"
    c.refresh_from_db()
    assert c.doi_status == "confirmed" and c.doi_confirmation_token is None and c.doi_confirmed_at
    assert [(e.kind, e.data) for e in events] == [("topic_subscribed", {"topicId": str(topic.pk)})]
    assert not ContactTopic.objects.get(contact=c, topic=topic).pending_doi_confirmation
    assert ContactActivity.objects.filter(contact=c, activity_type="topic_confirmed").count() == 1
    # a confirmed contact joins further DOI topics directly
    other = make_topic(org, doi=True)
    assert topic_subscribe(contact=c, topic=other, source="public_api", actor="x") == "subscribed"


def test_expired_doi_token_is_refused(fired):
    org = make_org()
    topic = make_topic(org, doi=True)
    c = make_contact(org)
    topic_subscribe(contact=c, topic=topic, source="form", actor="x")
    c.refresh_from_db()
    Contact.objects.filter(pk=c.pk).update(doi_token_expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert doi_confirm(token=c.doi_confirmation_token) == "expired"


def test_forced_doi_and_skip_doi(fired):
    _, dois = fired
    org = make_org()
    plain, gated = make_topic(org, doi=False), make_topic(org, doi=True)
    c = make_contact(org)
    assert topic_subscribe(contact=c, topic=plain, source="form", actor="x", force_doi=True) == "pending_doi"
    assert ContactTopic.objects.get(contact=c, topic=plain).pending_doi_confirmation
    d = make_contact(org)
    assert topic_subscribe(contact=d, topic=gated, source="admin", actor="x", skip_doi=True) == "subscribed"


def test_attestation_confirms_and_fires(fired):
    events, _ = fired
    org = make_org()
    topic = make_topic(org, doi=True)
    c = make_contact(org)
    topic_subscribe(contact=c, topic=topic, source="form", actor="x")
    events.clear()
    assert doi_attest(contact=c, actor="user:1", source="paper form") is True
    c.refresh_from_db()
    assert c.doi_status == "confirmed" and c.doi_confirmation_source == "paper form"
    assert [e.kind for e in events] == ["topic_subscribed"]
    assert doi_attest(contact=c, actor="user:1", source="again") is False


def test_unsubscribe_effects_depend_on_source(fired):
    org = make_org()
    WebhookEndpoint.objects.create(
        organization=org, url="http://127.0.0.1:9/h", secret="s", events=["topic.unsubscribed"]
    )
    t1, t2 = make_topic(org), make_topic(org)
    c = make_contact(org)
    for t in (t1, t2):
        topic_subscribe(contact=c, topic=t, source="admin", actor="x")
    assert topic_unsubscribe(contact=c, topic=t1, source="public_api", actor="x") is True
    assert topic_unsubscribe(contact=c, topic=t1, source="public_api", actor="x") is False
    assert not WebhookDelivery.objects.exists()
    assert contact_unsubscribe_all(contact=c, source="public_email_link", actor="x") == 1
    c.refresh_from_db()
    assert c.unsubscribed_at is not None
    assert WebhookDelivery.objects.filter(event_type="topic.unsubscribed").count() == 1
    assert ContactActivity.objects.filter(contact=c, activity_type="topic_unsubscribed").count() == 1
    # a completed opt-in without DOI clears the global opt-out
    topic_subscribe(contact=c, topic=t2, source="form", actor="x")
    c.refresh_from_db()
    assert c.unsubscribed_at is None
