"""Segment CRUD and members (API-25, DOM-09, AUT-34 validation)."""

import pytest

from owlat.inuse import register_segment_in_use, segments
from owlat.models import Segment, Topic
from testsupport.api import ApiClient, error_of, make_key, make_org

pytestmark = pytest.mark.django_db

SEGMENT_KEYS = {"id", "name", "description", "filters", "cachedCount", "createdAt", "updatedAt"}


@pytest.fixture
def org():
    return make_org("Org A")


@pytest.fixture
def api(org):
    return ApiClient(make_key(org)[1])


def make_contact(org, email, **fields):
    from owlat.contacts import contact_find_or_create

    return contact_find_or_create(organization_id=org.pk, email=email, source="api", actor="test", **fields)[
        0
    ]


def invalid(response, message, field=None):
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["category"] == "invalid_input" and error["message"] == message
    if field is not None:
        assert error["data"]["field"] == field
    return error


PRO = {
    "logic": "AND",
    "conditions": [{"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}],
}


def test_segment_crud_and_members(api, org):
    pro1 = make_contact(org, "p1@example.com", properties={"plan": "pro"})
    pro2 = make_contact(org, "p2@example.com", properties={"plan": "PRO"})
    make_contact(org, "free@example.com", properties={"plan": "free"})
    created = api.post("/segments", {"name": "Pro users", "filters": PRO})
    assert created.status_code == 201
    data = created.json()["data"]
    assert set(data) == SEGMENT_KEYS
    assert data["filters"] == PRO and data["cachedCount"] == 2 and data["description"] is None
    segment_id = data["id"]
    assert api.get(f"/segments/{segment_id}/").json()["data"] == data

    members = api.get(f"/segments/{segment_id}/contacts").json()
    assert sorted(c["id"] for c in members["data"]) == sorted([str(pro1.pk), str(pro2.pk)])
    assert set(members["data"][0]) == {
        "id",
        "email",
        "firstName",
        "lastName",
        "source",
        "createdAt",
        "updatedAt",
    }
    assert members["pagination"]["totalItems"] == 2

    everyone = {"logic": "OR", "conditions": []}
    updated = api.patch(f"/segments/{segment_id}", {"filters": everyone, "description": "all"})
    assert updated.status_code == 200
    assert updated.json()["data"]["cachedCount"] == 3 and updated.json()["data"]["name"] == "Pro users"
    assert api.put(f"/segments/{segment_id}", {"name": "All"}).json()["data"]["name"] == "All"
    assert api.get(f"/segments/{segment_id}/contacts").json()["pagination"]["totalItems"] == 3

    deleted = api.delete(f"/segments/{segment_id}")
    assert deleted.json() == {"data": {"id": segment_id, "deleted": True}}
    missing = api.get(f"/segments/{segment_id}")
    assert missing.status_code == 404 and error_of(missing)["message"] == "Segment not found"


def test_segment_without_filters_matches_everyone(api, org):
    make_contact(org, "a@example.com")
    data = api.post("/segments", {"name": "All"}).json()["data"]
    assert data["filters"] == {"logic": "AND", "conditions": []}
    assert data["cachedCount"] == 1


def test_segment_filter_validation_names_the_field(api, org):
    bad_operator = {
        "logic": "AND",
        "conditions": [{"kind": "contact_property", "field": "plan", "operator": "is"}],
    }
    error = invalid(
        api.post("/segments", {"name": "x", "filters": bad_operator}), error_message(bad_operator)
    )
    assert error["data"]["field"] == "filters.conditions[0].operator"
    assert error["data"]["fields"] == {"filters.conditions[0].operator": [error["message"]]}
    invalid(
        api.post("/segments", {"name": "x", "filters": {"logic": "XOR", "conditions": []}}),
        'Logic must be "AND" or "OR".',
        "filters.logic",
    )
    invalid(api.post("/segments", {"name": "x", "filters": "all"}), error_message("all"), "filters")
    foreign_topic = Topic.objects.create(organization=make_org("Org B"), name="Theirs")
    topic_condition = {
        "logic": "AND",
        "conditions": [{"kind": "topic_membership", "topicId": str(foreign_topic.pk), "operator": "equals"}],
    }
    invalid(
        api.post("/segments", {"name": "x", "filters": topic_condition}),
        "Topic not found",
        "filters.conditions[0].topicId",
    )
    invalid(api.post("/segments", {"filters": PRO}), "name is required", "name")
    invalid(api.post("/segments", {"name": "x", "cachedCount": 3}), "cachedCount is read-only", "cachedCount")
    invalid(api.get("/segments/123"), "Invalid segment ID format")
    assert not Segment.objects.exists()


def error_message(filters):
    from owlat.conditions import ConditionError, parse_filters

    try:
        parse_filters(filters)
    except ConditionError as exc:
        return exc.message
    raise AssertionError("expected a ConditionError")


def test_segment_with_topic_condition(api, org):
    topic = Topic.objects.create(organization=org, name="News", require_double_opt_in=False)
    member = make_contact(org, "m@example.com")
    make_contact(org, "n@example.com")
    from owlat.topics import topic_subscribe

    topic_subscribe(contact=member, topic=topic, source="admin", actor="test")
    filters = {
        "logic": "AND",
        "conditions": [{"kind": "topic_membership", "topicId": str(topic.pk), "operator": "equals"}],
    }
    segment_id = api.post("/segments", {"name": "News readers", "filters": filters}).json()["data"]["id"]
    members = api.get(f"/segments/{segment_id}/contacts").json()["data"]
    assert [m["id"] for m in members] == [str(member.pk)]


def test_segment_delete_refused_while_in_use(api, org):
    segment_id = api.post("/segments", {"name": "S"}).json()["data"]["id"]

    def checker(organization_id, obj_id):
        return [{"kind": "automation", "id": "aut_1"}]

    register_segment_in_use(checker)
    try:
        response = api.delete(f"/segments/{segment_id}")
    finally:
        segments.unregister(checker)
    assert response.status_code == 422
    assert error_of(response)["data"] == {
        "reason": "segment_in_use",
        "usedBy": [{"kind": "automation", "id": "aut_1"}],
    }
    assert Segment.objects.filter(pk=segment_id).exists()


def test_segment_scopes_and_tenant_isolation(api, org):
    other = make_org("Org B")
    theirs = Segment.objects.create(
        organization=other, name="Theirs", filters={"logic": "AND", "conditions": []}
    )
    make_contact(other, "theirs@example.com")
    for method, url, body in (
        ("GET", f"/segments/{theirs.pk}", None),
        ("PUT", f"/segments/{theirs.pk}", {"name": "Hacked"}),
        ("DELETE", f"/segments/{theirs.pk}", None),
        ("GET", f"/segments/{theirs.pk}/contacts", None),
    ):
        response = api.request(method, url, body)
        assert response.status_code == 404, (method, url)
    theirs.refresh_from_db()
    assert theirs.name == "Theirs"
    # our own segment never lists the other organization's contacts
    mine = api.post("/segments", {"name": "Everyone"}).json()["data"]["id"]
    assert api.get(f"/segments/{mine}/contacts").json()["data"] == []
    _, read_only = make_key(org, scopes=["segments:read"])
    response = ApiClient(read_only).post("/segments", {"name": "x"})
    assert error_of(response)["message"] == "This API key is missing the required scope: segments:write"
    _, write_only = make_key(org, scopes=["segments:write"])
    response = ApiClient(write_only).get(f"/segments/{mine}/contacts")
    assert error_of(response)["message"] == "This API key is missing the required scope: segments:read"
