"""The sign-up form writes of `/api/v1/forms`: create, change, delete — checked by the admin's own forms, scoped to
the key's organization, refusals naming the field."""

from __future__ import annotations

import pytest

from owlat.models import ContactProperty, Segment, SignupForm, Topic
from testsupport.api import ApiClient, error_of, make_key, make_org

pytestmark = pytest.mark.django_db


@pytest.fixture
def news(org):
    return Topic.objects.create(organization=org, name="News", require_double_opt_in=True)


@pytest.fixture
def tips(org):
    return Topic.objects.create(organization=org, name="Tips", require_double_opt_in=False)


def _field(response):
    return (error_of(response).get("data") or {}).get("field")


def test_a_form_is_created_with_its_topics_fields_and_translations(api, org, news, tips):
    ContactProperty.objects.create(organization=org, key="plan", type="string")
    response = api.post(
        "/forms",
        {
            "name": "  Footer form ",
            "topics": [{"topicId": str(news.pk)}, {"topicId": str(tips.pk), "preselected": False}],
            "fields": [
                {"kind": "first_name", "required": True},
                {"kind": "property", "propertyKey": "plan", "label": "Your plan"},
            ],
            "texts": [{"language": "de", "title": "Newsletter abonnieren", "submitLabel": "Abonnieren"}],
            "brandColor": "#112233",
            "successRedirectUrl": "https://www.example.com/thanks?from=form",
            "allowedOrigins": ["https://www.example.com", "http://localhost:8000"],
        },
    )
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert data["name"] == "Footer form"
    assert [(t["name"], t["preselected"]) for t in data["topics"]] == [("News", True), ("Tips", False)]
    assert [(f["kind"], f["propertyKey"], f["required"]) for f in data["fields"]] == [
        ("first_name", None, True),
        ("property", "plan", False),
    ]
    assert data["allowedOrigins"] == ["https://www.example.com", "http://localhost:8000"]
    form = SignupForm.objects.get(pk=data["id"])
    assert form.organization_id == org.pk
    assert form.brand_color == "#112233"
    assert form.title == "Subscribe to our newsletter"  # the admin's default where nothing was sent
    assert form.texts.get().submit_label == "Abonnieren"
    assert api.get(f"/forms/{form.pk}").json()["data"]["publicUrl"].endswith(f"/forms/{form.pk}/")


def test_a_patch_changes_only_what_it_sends_and_lists_replace(api, org, news, tips):
    created = api.post("/forms", {"name": "Footer", "topics": [{"topicId": str(news.pk)}]}).json()["data"]
    response = api.patch(f"/forms/{created['id']}", {"title": "Join us", "isActive": False})
    assert response.status_code == 200, response.content
    form = SignupForm.objects.get(pk=created["id"])
    assert (form.name, form.title, form.is_active) == ("Footer", "Join us", False)
    assert [t.topic_id for t in form.form_topics.all()] == [news.pk]

    response = api.put(f"/forms/{form.pk}", {"topics": [{"topicId": str(tips.pk)}], "fields": []})
    assert response.status_code == 200, response.content
    assert [t["name"] for t in response.json()["data"]["topics"]] == ["Tips"]
    assert api.patch(f"/forms/{form.pk}", {}).status_code == 200  # nothing sent, nothing changed
    assert SignupForm.objects.get(pk=form.pk).title == "Join us"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"topics": "T"}, "name", "name is required"),
        ({"name": "   ", "topics": "T"}, "name", "name is required"),
        ({"name": "F", "topics": []}, "topics", None),
        ({"name": "F", "topics": [{"topicId": "11111111-1111-4111-8111-111111111111"}]}, "topics[0].topicId",
         "topics[0].topicId: topic not found"),
        ({"name": "F", "topics": "TT"}, "topics[1].topicId", "topics[1].topicId: each topic is offered once; "
         "topic ids must be unique"),
        ({"name": "F", "topics": "T", "brandColor": "red"}, "brandColor", None),
        ({"name": "F", "topics": "T", "successRedirectUrl": "javascript:alert(1)"}, "successRedirectUrl", None),
        ({"name": "F", "topics": "T", "allowedOrigins": ["https://www.example.com/path"]}, "allowedOrigins[0]",
         None),
        ({"name": "F", "topics": "T", "fields": [{"kind": "property"}]}, "fields[0].propertyKey",
         "propertyKey is required with kind property"),
        ({"name": "F", "topics": "T", "fields": [{"kind": "property", "propertyKey": "nope"}]},
         "fields[0].propertyKey", "fields[0].propertyKey: contact property not found"),
        ({"name": "F", "topics": "T", "fields": [{"kind": "first_name"}, {"kind": "first_name"}]}, "fields[1].kind",
         None),
        ({"name": "F", "topics": "T", "texts": [{"language": "de"}, {"language": "de"}]}, "texts[1].language",
         None),
        ({"name": "F", "topics": "T", "texts": [{"language": "xx-nope"}]}, "texts[0].language", None),
        ({"name": "F", "topics": "T", "submitLabel": "x" * 61}, "submitLabel", None),
        ({"name": "F", "topics": "T", "isActive": "yes"}, "isActive", "isActive must be a boolean"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(api, org, news, body, field, message):
    if body.get("topics") in ("T", "TT"):
        body["topics"] = [{"topicId": str(news.pk)}] * len(body["topics"])
    response = api.post("/forms", body)
    assert response.status_code == 400, response.content
    assert _field(response) == field
    if message:
        assert error_of(response)["message"] == message
    assert not SignupForm.objects.exists()


def test_another_organizations_topics_properties_and_forms_are_not_reachable(api, org, news):
    beta = make_org("Beta")
    their_topic = Topic.objects.create(organization=beta, name="Theirs")
    ContactProperty.objects.create(organization=beta, key="secret")
    their_form = SignupForm.objects.create(organization=beta, name="Theirs")

    refused = api.post("/forms", {"name": "F", "topics": [{"topicId": str(their_topic.pk)}]})
    assert (refused.status_code, _field(refused)) == (400, "topics[0].topicId")
    refused = api.post(
        "/forms",
        {
            "name": "F",
            "topics": [{"topicId": str(news.pk)}],
            "fields": [{"kind": "property", "propertyKey": "secret"}],
        },
    )
    assert (refused.status_code, _field(refused)) == (400, "fields[0].propertyKey")
    assert api.patch(f"/forms/{their_form.pk}", {"name": "Mine"}).status_code == 404
    assert api.delete(f"/forms/{their_form.pk}").status_code == 404
    assert SignupForm.objects.get(pk=their_form.pk).name == "Theirs"


def test_a_form_a_segment_asks_about_is_not_deleted(api, org, news):
    form_id = api.post("/forms", {"name": "F", "topics": [{"topicId": str(news.pk)}]}).json()["data"]["id"]
    segment = Segment.objects.create(
        organization=org,
        name="Joined by form",
        filters={
            "logic": "AND",
            "conditions": [{"kind": "signup_form", "formId": form_id, "operator": "equals"}],
        },
    )
    refused = api.delete(f"/forms/{form_id}")
    assert refused.status_code == 422
    assert error_of(refused)["data"]["usedBy"] == [{"kind": "segment", "id": str(segment.pk)}]
    segment.delete()
    deleted = api.delete(f"/forms/{form_id}")
    assert deleted.json()["data"] == {"id": form_id, "deleted": True}
    assert not SignupForm.objects.filter(pk=form_id).exists()


def test_writes_need_the_manage_scope(org, news):
    reader = ApiClient(make_key(org, scopes=["topics:read", "topics:write"])[1])
    response = reader.post("/forms", {"name": "F", "topics": [{"topicId": str(news.pk)}]})
    assert response.status_code == 403
    assert not SignupForm.objects.exists()


def test_a_list_sent_in_an_update_is_checked_item_by_item(api, news):
    form_id = api.post("/forms", {"name": "F", "topics": [{"topicId": str(news.pk)}]}).json()["data"]["id"]
    refused = api.patch(f"/forms/{form_id}", {"fields": [{"label": "no kind"}]})
    assert (refused.status_code, _field(refused)) == (400, "fields[0].kind")
    refused = api.patch(f"/forms/{form_id}", {"topics": []})
    assert (refused.status_code, _field(refused)) == (400, "topics")
    refused = api.patch(f"/forms/{form_id}", {"name": " "})
    assert (refused.status_code, _field(refused)) == (400, "name")
