"""Contacts endpoints (API-13…18, API-09, D-14) and keyset pagination (API-07)."""

import datetime as dt
import re

import pytest
from django.utils import timezone

from owlat.models import AuditLog, Contact, ContactActivity, ContactPropertyValue, ContactTopic, Topic
from testsupport.api import ApiClient, error_of, make_key, make_org

pytestmark = pytest.mark.django_db

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
CONTACT_KEYS = {"id", "email", "firstName", "lastName", "source", "createdAt", "updatedAt"}


def make_contact(org, email, **fields):
    from owlat.contacts import contact_find_or_create

    contact, _ = contact_find_or_create(
        organization_id=org.pk, email=email, source="api", actor="test", **fields
    )
    return contact


def invalid(response, message, field=None):
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["category"] == "invalid_input"
    assert error["message"] == message
    if field is not None:
        assert error["data"]["field"] == field
    return error


# --- POST /contacts (API-14) ---------------------------------------------------------------------------------


def test_create_contact_returns_the_seven_keys(api, org, key):
    response = api.post("/contacts", {"email": "Jane@Example.com", "firstName": "Jane"})
    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == CONTACT_KEYS
    assert data["email"] == "jane@example.com"
    assert data["firstName"] == "Jane" and data["lastName"] is None
    assert data["source"] == "api"
    assert ISO.match(data["createdAt"]) and ISO.match(data["updatedAt"])
    contact = Contact.objects.get(pk=data["id"])
    assert contact.organization_id == org.pk
    # DOM-06 effects of a real insert, with the API actor (API-12)
    assert ContactActivity.objects.filter(contact=contact, activity_type="created").exists()
    audit = AuditLog.objects.get(action="contact.created", resource_id=str(contact.pk))
    assert audit.user_id == f"api_key:{key[0].pk}"


def test_create_contact_duplicate_is_409(api, org):
    assert api.post("/contacts", {"email": "jane@example.com"}).status_code == 201
    response = api.post("/contacts", {"email": "JANE@example.com "})
    assert response.status_code == 409
    assert response.json() == {
        "error": {"category": "already_exists", "message": "A contact with this email already exists"}
    }


def test_soft_deleted_contact_does_not_block_creation(api, org):
    from owlat.contacts import contact_soft_delete

    old = make_contact(org, "gone@example.com")
    contact_soft_delete(contact=old, actor="test")
    response = api.post("/contacts", {"email": "gone@example.com"})
    assert response.status_code == 201
    assert response.json()["data"]["id"] != str(old.pk)


@pytest.mark.parametrize(
    ("body", "message", "field"),
    [
        ({}, "Email is required", "email"),
        ({"email": None}, "Email is required", "email"),
        ({"email": 42}, "Email must be a string", "email"),
        ({"email": "not-an-email"}, "Invalid email format", "email"),
        ({"email": ("a" * 250) + "@example.com"}, "Invalid email format", "email"),
        ({"email": "a@example.com", "firstName": 1}, "firstName must be a string", "firstName"),
        (
            {"email": "a@example.com", "firstName": "x" * 201},
            "firstName must be at most 200 characters",
            "firstName",
        ),
        ({"email": "a@example.com", "lastName": ["x"]}, "lastName must be a string", "lastName"),
        (
            {"email": "a@example.com", "lastName": "x" * 201},
            "lastName must be at most 200 characters",
            "lastName",
        ),
        ({"email": "a@example.com", "language": 5}, "language must be a string", "language"),
        (
            {"email": "a@example.com", "language": "english"},
            "language must be a valid language code (e.g., 'en', 'de', 'fr', 'en-US')",
            "language",
        ),
        (
            {"email": "a@example.com", "timezone": "Mars/Olympus"},
            "timezone must be a valid IANA time zone (e.g., 'Europe/Berlin')",
            "timezone",
        ),
        ({"email": "a@example.com", "properties": [1]}, "properties must be an object", "properties"),
        (
            {"email": "a@example.com", "properties": {"plan": {"x": 1}}},
            "properties values must be strings, numbers, booleans or null",
            "properties.plan",
        ),
    ],
)
def test_create_contact_validation_messages(api, body, message, field):
    invalid(api.post("/contacts", body), message, field)
    assert not Contact.objects.exists()


def test_create_contact_check_order(api):
    # email is checked before the names
    invalid(api.post("/contacts", {"firstName": 1}), "Email is required")
    invalid(api.post("/contacts", {"email": "bad", "firstName": 1}), "Invalid email format")
    invalid(
        api.post("/contacts", {"email": "a@example.com", "firstName": 1, "lastName": 2}),
        "firstName must be a string",
    )
    invalid(api.post("/contacts", raw=b"[]"), "Invalid JSON in request body")
    invalid(api.post("/contacts", raw=b""), "Invalid JSON in request body")


def test_create_contact_accepts_d14_extras_and_ignores_unknown_keys(api, org):
    response = api.post(
        "/contacts",
        {
            "email": "extra@example.com",
            "language": "de",
            "timezone": "Europe/Berlin",
            "properties": {"plan": "pro", "seats": 3, "vip": True},
            "somethingUnknown": {"x": 1},
            "lastName": None,
        },
    )
    assert response.status_code == 201
    assert set(response.json()["data"]) == CONTACT_KEYS
    contact = Contact.objects.get(email="extra@example.com")
    assert (contact.language, contact.timezone, contact.last_name) == ("de", "Europe/Berlin", None)
    values = dict(ContactPropertyValue.objects.filter(contact=contact).values_list("property__key", "value"))
    assert values == {"plan": "pro", "seats": "3", "vip": "true"}


# --- GET /contacts/{idOrEmail} (API-15, API-09) -------------------------------------------------------------


def test_get_contact_by_encoded_email_and_by_id(api, org):
    contact = make_contact(org, "jane@example.com", first_name="Jane")
    for url in (
        "/contacts/jane%40example.com",
        "/contacts/jane%40example.com/",
        "/contacts/JANE%40Example.COM",
        "/contacts/jane@example.com",
        f"/contacts/{contact.pk}",
        f"/contacts/{contact.pk}/",
    ):
        response = api.get(url)
        assert response.status_code == 200, url
        assert response.json()["data"]["id"] == str(contact.pk)
        assert response.json()["data"]["firstName"] == "Jane"


def test_plus_in_path_stays_a_plus(api, org):
    contact = make_contact(org, "jane+news@example.com")
    response = api.get("/contacts/jane%2Bnews%40example.com")
    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(contact.pk)
    raw_plus = api.get("/contacts/jane+news@example.com")
    assert raw_plus.json()["data"]["id"] == str(contact.pk)


def test_get_unknown_or_soft_deleted_contact_is_404(api, org):
    from owlat.contacts import contact_soft_delete

    gone = make_contact(org, "gone@example.com")
    contact_soft_delete(contact=gone, actor="test")
    for url in (
        "/contacts/nobody%40example.com",
        "/contacts/gone%40example.com",
        f"/contacts/{gone.pk}",
        "/contacts/00000000-0000-4000-8000-000000000000",
    ):
        response = api.get(url)
        assert response.status_code == 404, url
        assert response.json() == {"error": {"category": "not_found", "message": "Contact not found"}}


@pytest.mark.parametrize(
    "segment",
    ["not-an-id", "12345", "a%ZZb%40example.com", "%E0%A4%A", "bad%2Fid", "jane%40", "%40example.com"],
)
def test_malformed_id_or_email_is_400(api, segment):
    response = api.get(f"/contacts/{segment}")
    invalid(response, "Invalid contact ID or email format")


def test_encoded_slash_in_address_does_not_break_routing(api, org):
    contact = make_contact(org, "a/b@example.com")
    response = api.get("/contacts/a%2Fb%40example.com")
    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(contact.pk)


# --- PUT /contacts/{idOrEmail} (API-16) ---------------------------------------------------------------------


def test_put_is_a_partial_update(api, org):
    contact = make_contact(org, "jane@example.com", first_name="Jane")
    response = api.put("/contacts/jane%40example.com", {"lastName": "Smith"})
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["lastName"] == "Smith" and data["firstName"] == "Jane"
    assert api.put(f"/contacts/{contact.pk}", {}).status_code == 200
    # null means absent: nothing changes
    same = api.put(f"/contacts/{contact.pk}", {"firstName": None})
    assert same.json()["data"]["firstName"] == "Jane"


def test_put_changes_fire_contact_updated(api, org, monkeypatch):
    from owlat import registry

    seen = []

    def listener(event):
        seen.append((event.kind, event.data))
        return []

    monkeypatch.setattr(registry, "_trigger_listeners", [listener])
    make_contact(org, "jane@example.com", first_name="Jane")
    seen.clear()
    api.put("/contacts/jane%40example.com", {"firstName": "Janet", "timezone": "Europe/Berlin"})
    assert seen == [("contact_updated", {"changedFields": ["firstName", "timezone"]})]


def test_put_email_change_and_conflict(api, org):
    make_contact(org, "jane@example.com")
    make_contact(org, "bob@example.com")
    moved = api.put("/contacts/jane%40example.com", {"email": "Janet@Example.com"})
    assert moved.status_code == 200 and moved.json()["data"]["email"] == "janet@example.com"
    clash = api.put("/contacts/janet%40example.com", {"email": "bob@example.com"})
    assert clash.status_code == 409
    assert clash.json() == {
        "error": {
            "category": "already_exists",
            "message": "A contact with this email already exists: bob@example.com",
        }
    }


def test_put_validates_body_before_lookup(api, org):
    invalid(api.put("/contacts/nobody%40example.com", raw=b"nope"), "Invalid JSON in request body")
    invalid(api.put("/contacts/nobody%40example.com", {"email": 1}), "email must be a string", "email")
    invalid(api.put("/contacts/not-an-id", {"email": "bad"}), "Invalid email format", "email")
    invalid(
        api.put("/contacts/nobody%40example.com", {"firstName": 1}), "firstName must be a string", "firstName"
    )
    invalid(
        api.put("/contacts/nobody%40example.com", {"lastName": False}),
        "lastName must be a string",
        "lastName",
    )
    invalid(api.put("/contacts/not-an-id", {"lastName": "x"}), "Invalid contact ID or email format")
    missing = api.put("/contacts/nobody%40example.com", {"lastName": "x"})
    assert missing.status_code == 404 and error_of(missing)["message"] == "Contact not found"


# --- DELETE /contacts/{idOrEmail} (API-17) -------------------------------------------------------------------


def test_delete_erases_permanently(api, org, key):
    contact = make_contact(org, "jane@example.com", properties={"plan": "pro"})
    topic = Topic.objects.create(organization=org, name="News", require_double_opt_in=False)
    from owlat.topics import topic_subscribe

    topic_subscribe(contact=contact, topic=topic, source="admin", actor="test")
    response = api.delete("/contacts/jane%40example.com")
    assert response.status_code == 200
    assert response.json() == {"data": {"id": str(contact.pk), "deleted": True}}
    assert not Contact.objects.filter(pk=contact.pk).exists()
    assert not ContactTopic.objects.filter(topic=topic).exists()
    assert not ContactPropertyValue.objects.exists()
    audit = AuditLog.objects.get(action="contact.deleted", resource_id=str(contact.pk))
    assert audit.user_id == f"api_key:{key[0].pk}"
    again = api.delete("/contacts/jane%40example.com")
    assert again.status_code == 404 and error_of(again)["message"] == "Contact not found"
    invalid(api.delete("/contacts/nonsense"), "Invalid contact ID or email format")


# --- GET /contacts (API-18, API-07) ---------------------------------------------------------------------------


def _contacts(org, n, prefix="c"):
    rows = []
    base = timezone.now() - dt.timedelta(days=1)
    for i in range(n):
        contact = make_contact(org, f"{prefix}{i:03d}@example.com", first_name=f"First{i}")
        rows.append(contact)
    # several contacts share a creation time: the id breaks ties
    for i, contact in enumerate(rows):
        Contact.objects.filter(pk=contact.pk).update(created_at=base + dt.timedelta(seconds=i // 3))
    return rows


def _walk(api, url):
    seen, pages = [], 0
    cursor = None
    while True:
        sep = "&" if "?" in url else "?"
        page_url = url if cursor is None else f"{url}{sep}cursor={cursor}"
        response = api.get(page_url)
        assert response.status_code == 200, response.content
        body = response.json()
        seen.extend(item["id"] for item in body["data"])
        pages += 1
        pagination = body["pagination"]
        assert set(pagination) == {"limit", "totalItems", "cursor", "isDone"}
        if pagination["isDone"]:
            assert pagination["cursor"] is None
            return seen, pages, pagination
        assert isinstance(pagination["cursor"], str)
        cursor = pagination["cursor"]
        assert pages < 100


def test_list_walk_returns_every_contact_once_newest_first(api, org, key):
    rows = _contacts(org, 23)
    seen, pages, pagination = _walk(api, "/contacts?limit=5")
    assert sorted(seen) == sorted(str(c.pk) for c in rows)
    assert len(seen) == len(set(seen)) == 23
    assert pages == 5
    assert pagination["totalItems"] == 23 and pagination["limit"] == 5
    expected = [str(c.pk) for c in Contact.objects.order_by("-created_at", "-id")]
    assert seen == expected


def test_list_defaults_and_limit_rules(api, org):
    _contacts(org, 30)
    default = api.get("/contacts").json()
    assert default["pagination"]["limit"] == 25 and len(default["data"]) == 25
    assert default["pagination"]["totalItems"] == 30 and default["pagination"]["isDone"] is False
    clamped = api.get("/contacts?limit=500").json()
    assert clamped["pagination"]["limit"] == 100 and clamped["pagination"]["isDone"] is True
    assert clamped["pagination"]["cursor"] is None
    for bad in ("0", "-1", "abc", "1.5", ""):
        invalid(api.get(f"/contacts?limit={bad}"), "Invalid limit")


def test_list_excludes_soft_deleted_and_other_organizations(api, org):
    from owlat.contacts import contact_soft_delete

    mine = make_contact(org, "mine@example.com")
    gone = make_contact(org, "gone@example.com")
    contact_soft_delete(contact=gone, actor="test")
    other = make_org("Org B")
    make_contact(other, "theirs@example.com")
    body = api.get("/contacts").json()
    assert [c["id"] for c in body["data"]] == [str(mine.pk)]
    assert body["pagination"]["totalItems"] == 1


def test_invalid_and_foreign_cursors_are_400(api, org):
    _contacts(org, 4)
    cursor = api.get("/contacts?limit=2").json()["pagination"]["cursor"]
    invalid(api.get("/contacts?cursor=garbage"), "Invalid cursor")
    invalid(api.get(f"/contacts?cursor={cursor[:-3]}xyz"), "Invalid cursor")
    # a cursor of another organization
    other = make_org("Org B")
    _, other_raw = make_key(other)
    invalid(ApiClient(other_raw).get(f"/contacts?cursor={cursor}"), "Invalid cursor")
    # a cursor of another list
    topic = Topic.objects.create(organization=org, name="T")
    invalid(api.get(f"/topics/{topic.pk}/contacts?cursor={cursor}"), "Invalid cursor")


def test_search_matches_email_and_names_case_insensitively(api, org):
    jane = make_contact(org, "jane@example.com", first_name="Jane", last_name="Doe")
    make_contact(org, "bob@example.com", first_name="Bob", last_name="Builder")
    smith = make_contact(org, "x@corp.example", first_name="Mary Jane", last_name="Smith")
    body = api.get("/contacts?search=JANE").json()
    assert [c["id"] for c in body["data"]] == [str(jane.pk), str(smith.pk)]  # best match first
    assert body["pagination"]["totalItems"] == 2
    plus = api.get("/contacts?search=mary+jane").json()
    assert [c["id"] for c in plus["data"]] == [str(smith.pk)]
    encoded = api.get("/contacts?search=mary%20jane").json()
    assert [c["id"] for c in encoded["data"]] == [str(smith.pk)]
    assert api.get("/contacts?search=builder").json()["pagination"]["totalItems"] == 1


def test_search_walk_returns_each_match_once(api, org):
    _contacts(org, 12, prefix="match")
    _contacts(org, 5, prefix="other")
    seen, _, pagination = _walk(api, "/contacts?search=match&limit=4")
    assert len(seen) == len(set(seen)) == 12
    assert pagination["totalItems"] == 12


# --- tenant isolation (DOM-01) -------------------------------------------------------------------------------


def test_key_of_org_a_cannot_read_or_write_org_b_contacts(api, org):
    other = make_org("Org B")
    theirs = make_contact(other, "theirs@example.com", first_name="Theirs")
    for method, url, body in (
        ("GET", f"/contacts/{theirs.pk}", None),
        ("GET", "/contacts/theirs%40example.com", None),
        ("PUT", f"/contacts/{theirs.pk}", {"firstName": "Hacked"}),
        ("DELETE", f"/contacts/{theirs.pk}", None),
    ):
        response = api.request(method, url, body)
        assert response.status_code == 404, (method, url)
        assert error_of(response)["message"] == "Contact not found"
    theirs.refresh_from_db()
    assert theirs.first_name == "Theirs"
    # the same address may exist in both organizations
    assert api.post("/contacts", {"email": "theirs@example.com"}).status_code == 201
