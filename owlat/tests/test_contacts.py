import pytest

from owlat.contacts import (
    ContactAlreadyExists,
    contact_erase,
    contact_find_or_create,
    contact_lookup,
    contact_property_values,
    contact_soft_delete,
    contact_update,
    is_valid_email,
    normalize_email,
)
from owlat.models import (
    AuditLog,
    Contact,
    ContactActivity,
    ContactIdentity,
    ContactTopic,
    WebhookDelivery,
    WebhookEndpoint,
)
from owlat.registry import _trigger_listeners, register_trigger_listener
from owlat.tests.factories import make_contact, make_org, make_topic
from owlat.topics import topic_subscribe

pytestmark = pytest.mark.django_db


@pytest.fixture
def fired():
    events = []

    def listener(event):
        events.append(event)
        return []

    register_trigger_listener(listener)
    yield events
    _trigger_listeners.remove(listener)


def test_normalize_and_validate_email():
    assert normalize_email("  Jane@Example.COM ") == "jane@example.com"
    assert is_valid_email("a@example.com")
    assert not is_valid_email("not-an-email")
    assert not is_valid_email(123)
    assert not is_valid_email("a" * 250 + "@example.com")


def test_create_inserts_once_with_effects(fired):
    org = make_org()
    WebhookEndpoint.objects.create(organization=org, url="http://127.0.0.1:9/hook", secret="s")
    contact, created = contact_find_or_create(
        organization_id=org.pk, email="Jane@Example.com", source="api", actor="api_key:1", first_name="Jane"
    )
    assert created and contact.email == "jane@example.com"
    assert ContactIdentity.objects.filter(
        contact=contact, channel="email", identifier="jane@example.com"
    ).exists()
    assert ContactActivity.objects.filter(
        contact=contact, activity_type="created", metadata={"source": "api"}
    ).exists()
    assert AuditLog.objects.filter(
        action="contact.created", resource_id=str(contact.pk), user_id="api_key:1"
    ).exists()
    assert WebhookDelivery.objects.filter(event_type="contact.created", organization=org).count() == 1
    assert [(e.kind, e.contact_id) for e in fired] == [("contact_created", str(contact.pk))]

    again, created_again = contact_find_or_create(
        organization_id=org.pk, email="jane@example.com", source="api", actor="x"
    )
    assert again.pk == contact.pk and not created_again
    assert len(fired) == 1


def test_strict_mode_refuses_existing_and_bulk_mode_fires_nothing(fired):
    org = make_org()
    contact_find_or_create(
        organization_id=org.pk, email="a@example.com", source="import", actor="x", fire=False
    )
    assert fired == []
    assert not ContactActivity.objects.exists()
    with pytest.raises(ContactAlreadyExists):
        contact_find_or_create(
            organization_id=org.pk, email="A@example.com", source="api", actor="x", mode="strict"
        )


def test_merge_fills_empty_fields_and_reports_update(fired):
    org = make_org()
    contact = make_contact(org, "m@example.com")
    fired.clear()
    merged, created = contact_find_or_create(
        organization_id=org.pk,
        email="m@example.com",
        source="import",
        actor="x",
        mode="merge",
        first_name="Mia",
        properties={"plan": "Pro"},
    )
    assert not created and merged.first_name == "Mia"
    assert contact_property_values(merged) == {"plan": "Pro"}
    assert [(e.kind, e.data) for e in fired] == [("contact_updated", {"changedFields": ["firstName"]})]
    assert merged.pk == contact.pk


def test_update_reports_changed_builtins_and_refuses_taken_email(fired):
    org = make_org()
    a = make_contact(org, "a@example.com", first_name="A")
    make_contact(org, "b@example.com")
    fired.clear()
    a, changed = contact_update(contact=a, changes={"first_name": "A", "last_name": "Smith"}, actor="x")
    assert changed == ["lastName"]
    assert fired[-1].data == {"changedFields": ["lastName"]}
    with pytest.raises(ContactAlreadyExists) as exc:
        contact_update(contact=a, changes={"email": "B@example.com"}, actor="x")
    assert exc.value.email == "b@example.com"
    _, changed = contact_update(contact=a, changes={}, actor="x")
    assert changed == []


def test_soft_deleted_contacts_are_invisible_and_do_not_block_email():
    org = make_org()
    c = make_contact(org, "gone@example.com")
    contact_soft_delete(contact=c, actor="x")
    assert contact_lookup(organization_id=org.pk, id_or_email="gone@example.com") is None
    new, created = contact_find_or_create(
        organization_id=org.pk, email="gone@example.com", source="api", actor="x"
    )
    assert created and new.pk != c.pk


def test_lookup_is_scoped_to_the_organization():
    a, b = make_org(), make_org()
    c = make_contact(a, "x@example.com")
    assert contact_lookup(organization_id=a.pk, id_or_email=str(c.pk)) == c
    assert contact_lookup(organization_id=b.pk, id_or_email=str(c.pk)) is None
    assert contact_lookup(organization_id=b.pk, id_or_email="x@example.com") is None
    assert contact_lookup(organization_id=a.pk, id_or_email="not-a-uuid") is None


def test_erase_removes_personal_rows_and_keeps_counts_right():
    org = make_org()
    topic = make_topic(org)
    c = make_contact(org, "erase@example.com")
    topic_subscribe(contact=c, topic=topic, source="admin", actor="x")
    topic.refresh_from_db()
    assert topic.cached_member_count == 1
    contact_erase(contact=c, actor="api_key:1")
    assert not Contact.objects.filter(pk=c.pk).exists()
    assert not ContactTopic.objects.exists() and not ContactIdentity.objects.exists()
    topic.refresh_from_db()
    assert topic.cached_member_count == 0
    assert AuditLog.objects.filter(action="contact.deleted", resource_id=str(c.pk)).exists()
