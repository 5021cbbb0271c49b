"""Topic membership (API-19/20) and topic CRUD (API-25)."""

import pytest

from owlat.inuse import register_topic_in_use, topics
from owlat.models import Contact, ContactTopic, DoiStatus, Topic
from testsupport.api import ApiClient, error_of, make_key, make_org

pytestmark = pytest.mark.django_db

TOPIC_KEYS = {
    "id",
    "name",
    "description",
    "displayOrder",
    "isDefault",
    "requireDoubleOptIn",
    "memberCount",
    "createdAt",
    "updatedAt",
}


@pytest.fixture
def td(org):
    return Topic.objects.create(organization=org, name="DOI topic", require_double_opt_in=True)


@pytest.fixture
def to(org):
    return Topic.objects.create(organization=org, name="Open topic", require_double_opt_in=False)


def make_contact(org, email):
    from owlat.contacts import contact_find_or_create

    return contact_find_or_create(organization_id=org.pk, email=email, source="api", actor="test")[0]


def invalid(response, message):
    assert response.status_code == 400, response.content
    assert error_of(response)["category"] == "invalid_input"
    assert error_of(response)["message"] == message


# --- POST /topics/{topicId}/contacts (API-19) -------------------------------------------------------------


def test_subscribe_by_email_to_doi_topic_is_pending(api, org, td):
    from owlat import registry

    started = []

    def hook(contact_id, topic_ids):
        started.append((contact_id, topic_ids))

    registry.register_doi_started_hook(hook)
    try:
        jane = make_contact(org, "jane@example.com")
        response = api.post(f"/topics/{td.pk}/contacts", {"email": "Jane@Example.com"})
    finally:
        registry._doi_started_hooks.remove(hook)
    assert response.status_code == 201
    assert response.json() == {
        "data": {"success": True, "contactId": str(jane.pk), "topicId": str(td.pk), "doiStatus": "pending"}
    }
    membership = ContactTopic.objects.get(contact=jane, topic=td)
    assert membership.consent_source == "public_api"
    assert membership.consent_ip == "127.0.0.1"
    assert started == [(str(jane.pk), [str(td.pk)])]  # the DOI mail is enqueued by the hook, not sent inline
    # already a member: still 201, the contact's current status
    again = api.post(f"/topics/{td.pk}/contacts", {"contactId": str(jane.pk)})
    assert again.status_code == 201 and again.json()["data"]["doiStatus"] == "pending"


def test_subscribe_by_contact_id_to_open_topic_is_not_required(api, org, to):
    bob = make_contact(org, "bob@example.com")
    response = api.post(f"/topics/{to.pk}/contacts/", {"contactId": str(bob.pk)})
    assert response.status_code == 201
    assert response.json()["data"] == {
        "success": True,
        "contactId": str(bob.pk),
        "topicId": str(to.pk),
        "doiStatus": "not_required",
    }
    to.refresh_from_db()
    assert to.cached_member_count == 1


def test_subscribe_confirmed_contact_reports_confirmed(api, org, td):
    from owlat.topics import doi_attest

    jane = make_contact(org, "jane@example.com")
    doi_attest(contact=jane, actor="test", source="admin")
    response = api.post(f"/topics/{td.pk}/contacts", {"email": "jane@example.com"})
    assert response.json()["data"]["doiStatus"] == "confirmed"
    assert Contact.objects.get(pk=jane.pk).doi_status == DoiStatus.CONFIRMED


def test_contact_id_wins_over_email(api, org, to):
    bob = make_contact(org, "bob@example.com")
    make_contact(org, "jane@example.com")
    response = api.post(f"/topics/{to.pk}/contacts", {"email": "jane@example.com", "contactId": str(bob.pk)})
    assert response.json()["data"]["contactId"] == str(bob.pk)


def test_subscribe_check_order(api, org, to):
    other_org = make_org("Org B")
    foreign = Topic.objects.create(organization=other_org, name="Theirs")
    invalid(api.post("/topics/not-a-uuid/contacts", raw=b"nope"), "Invalid topic ID format")
    invalid(api.post(f"/topics/{to.pk}/contacts", raw=b"nope"), "Invalid JSON in request body")
    invalid(api.post(f"/topics/{to.pk}/contacts", {}), "Either email or contactId is required")
    invalid(api.post(f"/topics/{to.pk}/contacts", {"email": "bad"}), "Invalid email format")
    invalid(api.post(f"/topics/{to.pk}/contacts", {"email": 3}), "Invalid email format")
    invalid(api.post(f"/topics/{to.pk}/contacts", {"contactId": "nope"}), "Invalid contactId format")
    invalid(api.post(f"/topics/{to.pk}/contacts", {"contactId": 12}), "Invalid contactId format")
    for topic_id in (foreign.pk, "00000000-0000-4000-8000-000000000000"):
        missing = api.post(f"/topics/{topic_id}/contacts", {"email": "nobody@example.com"})
        assert missing.status_code == 404
        assert missing.json() == {"error": {"category": "not_found", "message": "Topic not found"}}
    by_email = api.post(f"/topics/{to.pk}/contacts", {"email": "Nobody@example.com"})
    assert by_email.status_code == 404
    assert error_of(by_email)["message"] == 'Contact with email "nobody@example.com" not found'
    by_id = api.post(f"/topics/{to.pk}/contacts", {"contactId": "00000000-0000-4000-8000-000000000000"})
    assert by_id.status_code == 404 and error_of(by_id)["message"] == "Contact not found"
    assert not ContactTopic.objects.exists()


def test_subscribe_cannot_use_a_contact_of_another_org(api, org, to):
    theirs = make_contact(make_org("Org B"), "theirs@example.com")
    response = api.post(f"/topics/{to.pk}/contacts", {"contactId": str(theirs.pk)})
    assert response.status_code == 404 and error_of(response)["message"] == "Contact not found"
    response = api.post(f"/topics/{to.pk}/contacts", {"email": "theirs@example.com"})
    assert response.status_code == 404


def test_scope_topics_write_required(org, to):
    _, raw = make_key(org, scopes=["topics:read", "topics:manage"])
    response = ApiClient(raw).post(f"/topics/{to.pk}/contacts", {"email": "a@example.com"})
    assert response.status_code == 403
    assert error_of(response)["message"] == "This API key is missing the required scope: topics:write"


# --- DELETE /topics/{topicId}/contacts/{emailOrId} (API-20) ---------------------------------------------------


def test_unsubscribe_removes_then_reports_false(api, org, to):
    jane = make_contact(org, "jane@example.com")
    api.post(f"/topics/{to.pk}/contacts", {"email": "jane@example.com"})
    response = api.delete(f"/topics/{to.pk}/contacts/jane%40example.com")
    assert response.status_code == 200
    assert response.json() == {"data": {"success": True, "removed": True}}
    assert not ContactTopic.objects.filter(contact=jane).exists()
    again = api.delete(f"/topics/{to.pk}/contacts/{jane.pk}/")
    assert again.json() == {"data": {"success": True, "removed": False}}
    to.refresh_from_db()
    assert to.cached_member_count == 0


def test_unsubscribe_errors(api, org, to):
    invalid(api.delete("/topics/zzz/contacts/jane%40example.com"), "Invalid topic ID format")
    invalid(api.delete(f"/topics/{to.pk}/contacts/not-an-id"), "Invalid contact ID or email format")
    invalid(api.delete(f"/topics/{to.pk}/contacts/a%ZZ%40example.com"), "Invalid contact ID or email format")
    foreign = Topic.objects.create(organization=make_org("Org B"), name="Theirs")
    missing_topic = api.delete(f"/topics/{foreign.pk}/contacts/jane%40example.com")
    assert missing_topic.status_code == 404 and error_of(missing_topic)["message"] == "Topic not found"
    by_email = api.delete(f"/topics/{to.pk}/contacts/jane%40example.com")
    assert by_email.status_code == 404
    assert error_of(by_email)["message"] == 'Contact with email "jane@example.com" not found'
    by_id = api.delete(f"/topics/{to.pk}/contacts/00000000-0000-4000-8000-000000000000")
    assert by_id.status_code == 404 and error_of(by_id)["message"] == "Contact not found"


# --- topic CRUD (API-25) ------------------------------------------------------------------------------------


def test_topic_crud(api, org):
    created = api.post("/topics", {"name": "Weekly", "description": "News", "displayOrder": 2})
    assert created.status_code == 201
    data = created.json()["data"]
    assert set(data) == TOPIC_KEYS
    assert data["requireDoubleOptIn"] is True  # DOM-08 default
    assert (
        data["name"],
        data["description"],
        data["displayOrder"],
        data["isDefault"],
        data["memberCount"],
    ) == (
        "Weekly",
        "News",
        2,
        False,
        0,
    )
    topic_id = data["id"]
    assert api.get(f"/topics/{topic_id}").json()["data"] == data
    updated = api.put(f"/topics/{topic_id}/", {"requireDoubleOptIn": False})
    assert updated.status_code == 200 and updated.json()["data"]["requireDoubleOptIn"] is False
    assert updated.json()["data"]["name"] == "Weekly"
    patched = api.patch(f"/topics/{topic_id}", {"name": "Monthly", "isDefault": True})
    assert patched.json()["data"]["name"] == "Monthly" and patched.json()["data"]["isDefault"] is True
    deleted = api.delete(f"/topics/{topic_id}")
    assert deleted.status_code == 200
    assert deleted.json() == {"data": {"id": topic_id, "deleted": True}}
    assert api.get(f"/topics/{topic_id}").status_code == 404


def test_topic_create_fires_analytics(api, settings, monkeypatch):
    from owlat import analytics

    captured = []
    monkeypatch.setattr(analytics, "capture", lambda **kw: captured.append(kw))
    response = api.post("/topics", {"name": "Weekly"})
    assert captured and captured[0]["event"] == "topic_created"
    assert captured[0]["properties"] == {"topicId": response.json()["data"]["id"]}


def test_topic_validation(api, org, to):
    invalid(api.post("/topics", {}), "name is required")
    invalid(api.post("/topics", {"name": "  "}), "name is required")
    invalid(api.post("/topics", {"name": 3}), "name must be a string")
    invalid(api.post("/topics", {"name": "x" * 201}), "name must be at most 200 characters")
    invalid(
        api.post("/topics", {"name": "ok", "requireDoubleOptIn": "yes"}),
        "requireDoubleOptIn must be a boolean",
    )
    invalid(api.post("/topics", {"name": "ok", "displayOrder": "1"}), "displayOrder must be an integer")
    invalid(api.post("/topics", {"name": "ok", "memberCount": 5}), "memberCount is read-only")
    invalid(api.put(f"/topics/{to.pk}", {"memberCount": 5}), "memberCount is read-only")
    invalid(api.get("/topics/not-a-uuid"), "Invalid topic ID format")
    error = error_of(api.post("/topics", {"name": "ok", "memberCount": 5}))
    assert error["data"]["field"] == "memberCount"


def test_topic_list_search_and_walk(api, org):
    for i in range(7):
        api.post("/topics", {"name": f"Topic {i}"})
    api.post("/topics", {"name": "Other"})
    body = api.get("/topics?search=topic&limit=3").json()
    assert body["pagination"]["totalItems"] == 7 and len(body["data"]) == 3
    seen = [t["id"] for t in body["data"]]
    cursor = body["pagination"]["cursor"]
    while cursor:
        page = api.get(f"/topics?search=topic&limit=3&cursor={cursor}").json()
        seen += [t["id"] for t in page["data"]]
        cursor = page["pagination"]["cursor"]
    assert len(seen) == len(set(seen)) == 7


def test_topic_members_listing(api, org, td):
    from owlat.contacts import contact_soft_delete

    jane = make_contact(org, "jane@example.com")
    gone = make_contact(org, "gone@example.com")
    api.post(f"/topics/{td.pk}/contacts", {"email": "jane@example.com"})
    api.post(f"/topics/{td.pk}/contacts", {"email": "gone@example.com"})
    contact_soft_delete(contact=gone, actor="test")
    body = api.get(f"/topics/{td.pk}/contacts").json()
    assert body["pagination"] == {"limit": 25, "totalItems": 1, "cursor": None, "isDone": True}
    (member,) = body["data"]
    assert set(member) == {"contactId", "email", "addedAt", "pendingDoiConfirmation", "doiStatus"}
    assert member["contactId"] == str(jane.pk) and member["email"] == "jane@example.com"
    assert member["pendingDoiConfirmation"] is True and member["doiStatus"] == "pending"
    assert member["addedAt"].endswith("Z")


def test_topic_delete_refused_while_in_use(api, org, to):
    def checker(organization_id, topic_id):
        return [{"kind": "campaign", "id": "cmp_1"}] if str(topic_id) == str(to.pk) else []

    register_topic_in_use(checker)
    try:
        response = api.delete(f"/topics/{to.pk}")
    finally:
        topics.unregister(checker)
    assert response.status_code == 422
    error = error_of(response)
    assert error["category"] == "invalid_state"
    assert error["data"] == {"reason": "topic_in_use", "usedBy": [{"kind": "campaign", "id": "cmp_1"}]}
    assert Topic.objects.filter(pk=to.pk).exists()


def test_topic_scopes(org, to):
    _, read_only = make_key(org, scopes=["topics:read"])
    client = ApiClient(read_only)
    assert client.get(f"/topics/{to.pk}").status_code == 200
    for method in ("PUT", "PATCH", "DELETE"):
        response = client.request(method, f"/topics/{to.pk}", {"name": "x"})
        assert error_of(response)["message"] == "This API key is missing the required scope: topics:manage"
    _, write_only = make_key(org, scopes=["topics:write"])
    response = ApiClient(write_only).delete(f"/topics/{to.pk}")
    assert response.status_code == 403  # a membership key cannot delete topics


def test_tenant_isolation_for_topics(api, org):
    other = make_org("Org B")
    theirs = Topic.objects.create(organization=other, name="Theirs")
    for method, url, body in (
        ("GET", f"/topics/{theirs.pk}", None),
        ("PUT", f"/topics/{theirs.pk}", {"name": "Hacked"}),
        ("PATCH", f"/topics/{theirs.pk}", {"name": "Hacked"}),
        ("DELETE", f"/topics/{theirs.pk}", None),
        ("GET", f"/topics/{theirs.pk}/contacts", None),
    ):
        response = api.request(method, url, body)
        assert response.status_code == 404, (method, url)
        assert error_of(response)["message"] == "Topic not found"
    theirs.refresh_from_db()
    assert theirs.name == "Theirs"
    assert api.get("/topics").json()["pagination"]["totalItems"] == 0
