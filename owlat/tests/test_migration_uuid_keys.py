"""D-03 migration `owlat.0004_uuid_primary_keys`: a populated database migrates forward with every row kept, every
integer key replaced by a random UUID, and every foreign key still pointing at the same row (and back again)."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("owlat", "0003_webhook_endpoint_url_outbound_guard")]
AFTER = [("owlat", "0004_uuid_primary_keys")]
CONVERTED = [
    "Membership",
    "OrganizationSettings",
    "ContactIdentity",
    "ContactProperty",
    "ContactPropertyValue",
    "ContactTopic",
    "BlockedEmail",
    "ContactActivity",
    "Domain",
    "CampaignSender",
    "AuditLog",
    "WebhookAttempt",
    "SendingStat",
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _populate(apps) -> dict:
    get = lambda name: apps.get_model("owlat", name)  # noqa: E731
    user = apps.get_model("auth", "User").objects.create(username="migrator")
    org = get("Organization").objects.create(id=uuid.uuid4(), name="Acme")
    contact = get("Contact").objects.create(id=uuid.uuid4(), organization=org, email="a@example.com")
    topic = get("Topic").objects.create(id=uuid.uuid4(), organization=org, name="News")
    get("Membership").objects.create(user=user, organization=org, role="owner")
    get("OrganizationSettings").objects.create(organization=org, timezone="Europe/Berlin")
    get("ContactIdentity").objects.create(
        organization=org, contact=contact, channel="email", identifier="a@x"
    )
    plan = get("ContactProperty").objects.create(organization=org, key="plan", type="string")
    city = get("ContactProperty").objects.create(organization=org, key="city", type="string")
    get("ContactPropertyValue").objects.create(organization=org, contact=contact, property=plan, value="pro")
    get("ContactPropertyValue").objects.create(organization=org, contact=contact, property=city, value="Oslo")
    get("ContactTopic").objects.create(organization=org, contact=contact, topic=topic, consent_source="api")
    get("BlockedEmail").objects.create(organization=org, email="b@example.com", reason="manual")
    get("ContactActivity").objects.create(
        organization=org, contact=contact, activity_type="email_sent", occurred_at=dt.datetime.now(dt.UTC)
    )
    get("Domain").objects.create(organization=org, domain="example.com")
    get("CampaignSender").objects.create(organization=org, email="news@example.com", is_default=True)
    get("AuditLog").objects.create(
        organization=org, user_id="u1", action="contact.created", resource="contact"
    )
    endpoint = get("WebhookEndpoint").objects.create(
        id=uuid.uuid4(), organization=org, url="https://h.example/"
    )
    delivery = get("WebhookDelivery").objects.create(
        id=uuid.uuid4(), organization=org, endpoint=endpoint, event_type="contact.created", payload={}
    )
    get("WebhookAttempt").objects.create(delivery=delivery, attempt=1, status_code=200)
    get("SendingStat").objects.create(
        organization=org, day=dt.date(2026, 1, 1), sender_domain="example.com", sent=3
    )
    return {"org": org.pk, "contact": contact.pk, "delivery": delivery.pk}


def _property_values(apps) -> set[tuple[str, str]]:
    values = apps.get_model("owlat", "ContactPropertyValue").objects.select_related("property")
    return {(v.property.key, v.value) for v in values}


@pytest.mark.django_db(transaction=True)
def test_populated_database_migrates_to_uuid_keys_and_back():
    apps = _migrate(BEFORE)
    ids = _populate(apps)
    before_counts = {name: apps.get_model("owlat", name).objects.count() for name in CONVERTED}
    assert all(before_counts.values())

    apps = _migrate(AFTER)
    for name in CONVERTED:
        model = apps.get_model("owlat", name)
        assert model._meta.pk.get_internal_type() == "UUIDField"
        pks = list(model.objects.values_list("pk", flat=True))
        assert len(pks) == before_counts[name]
        assert all(isinstance(pk, uuid.UUID) and pk.version == 4 for pk in pks), name
    assert _property_values(apps) == {("plan", "pro"), ("city", "Oslo")}
    assert apps.get_model("owlat", "ContactTopic").objects.get().topic.name == "News"
    assert apps.get_model("owlat", "WebhookAttempt").objects.get().delivery_id == ids["delivery"]
    assert apps.get_model("owlat", "OrganizationSettings").objects.get().organization_id == ids["org"]
    # New rows get their key from the model default; the database no longer numbers them.
    prop = apps.get_model("owlat", "ContactProperty").objects.create(organization_id=ids["org"], key="tier")
    assert isinstance(prop.pk, uuid.UUID)
    prop.delete()

    apps = _migrate(BEFORE)
    assert _property_values(apps) == {("plan", "pro"), ("city", "Oslo")}
    prop = apps.get_model("owlat", "ContactProperty").objects.create(organization_id=ids["org"], key="tier")
    assert prop.pk == 3

    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
