"""The condition builder (AUT-34, DOM-09): forms that clean into the canonical condition JSON."""

from __future__ import annotations

import pytest

from owlat.forms.conditions import ConditionForm, FiltersForm
from owlat.forms.nested import error_messages
from owlat.models import ContactProperty, Topic
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def org():
    org = organization_create(name="Acme")
    ContactProperty.objects.create(organization=org, key="plan", label="Plan")
    return org


def clean(data, org):
    form = ConditionForm({f"c-{k}": v for k, v in data.items()}, prefix="c", organization_id=org.pk)
    return (form.cleaned_data["config"] if form.is_valid() else None), error_messages(form)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"},
            {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"},
        ),
        (
            {"kind": "contact_property", "field": "firstName", "operator": "not_contains", "value": "x"},
            {"kind": "contact_property", "field": "firstName", "operator": "not_contains", "value": "x"},
        ),
        (
            {"kind": "contact_property", "field": "plan", "operator": "gt", "value": " 10 "},
            {"kind": "contact_property", "field": "plan", "operator": "gt", "value": 10},
        ),
        (
            {"kind": "contact_property", "field": "plan", "operator": "lte", "value": "2.5"},
            {"kind": "contact_property", "field": "plan", "operator": "lte", "value": 2.5},
        ),
        (
            {"kind": "contact_property", "field": "email", "operator": "is_empty", "value": "ignored"},
            {"kind": "contact_property", "field": "email", "operator": "is_empty"},
        ),
        (
            {"kind": "contact_property", "field": "plan", "operator": "is_true"},
            {"kind": "contact_property", "field": "plan", "operator": "is_true"},
        ),
        (
            {"kind": "email_activity", "activity": "clicked", "activity_operator": "is_false"},
            {"kind": "email_activity", "field": "clicked", "operator": "is_false"},
        ),
    ],
)
def test_condition_form_cleans_to_the_canonical_condition(org, data, expected):
    assert clean(data, org) == (expected, [])


def test_topic_condition_stores_the_topic_id(org):
    topic = Topic.objects.create(organization=org, name="News")
    config, errors = clean(
        {"kind": "topic_membership", "topic": str(topic.pk), "topic_operator": "equals"}, org
    )
    assert errors == [] and config == {
        "kind": "topic_membership",
        "topicId": str(topic.pk),
        "operator": "equals",
    }


def test_signup_form_condition_stores_the_form_id_and_round_trips(org):
    from owlat.models import SignupForm
    from owlat.organizations import organization_create

    form = SignupForm.objects.create(organization=org, name="Footer")
    data = {"kind": "signup_form", "signup_form": str(form.pk), "form_operator": "not_equals"}
    config, errors = clean(data, org)
    assert errors == []
    assert config == {"kind": "signup_form", "formId": str(form.pk), "operator": "not_equals"}
    initial = ConditionForm.initial_from_config(config)
    assert clean({k: str(v) for k, v in initial.items()}, org) == (config, [])

    theirs = SignupForm.objects.create(organization=organization_create(name="Beta"), name="Theirs")
    _config, errors = clean({**data, "signup_form": str(theirs.pk)}, org)
    assert errors == ["Form: Choose one of this organization's sign-up forms."]
    assert clean({**data, "signup_form": ""}, org) == (None, ["Form: Choose a sign-up form."])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"kind": "contact_property", "field": "", "operator": "equals", "value": "a"},
            "Property: Choose the contact property to test.",
        ),
        (
            {"kind": "contact_property", "field": "plan", "operator": "gt", "value": "ten"},
            "Value: Enter a number to compare with, such as 10 or 2.5.",
        ),
        (
            {"kind": "contact_property", "field": "plan", "operator": "gt", "value": ""},
            "Value: Enter a number to compare with, such as 10 or 2.5.",
        ),
        (
            {"kind": "contact_property", "field": "plan", "operator": "equals", "value": ""},
            "Value: Enter the value to compare with (or choose “is empty”).",
        ),
        (
            {"kind": "contact_property", "field": "nope", "operator": "equals", "value": "a"},
            "Property: Choose one of the listed properties (define new ones under Contact properties).",
        ),
        ({"kind": "topic_membership", "topic": "", "topic_operator": "equals"}, "Topic: Choose a topic."),
        (
            {"kind": "weather"},
            "Condition: Select a valid choice. weather is not one of the available choices.",
        ),
    ],
)
def test_condition_form_errors_name_the_field_once(org, data, message):
    assert clean(data, org) == (None, [message])


def test_stored_conditions_round_trip_through_the_form(org):
    for stored in (
        {"kind": "contact_property", "field": "plan", "operator": "gte", "value": 3},
        {"kind": "contact_property", "field": "plan", "operator": "is_true", "value": True},
        {"kind": "email_activity", "field": "opened", "operator": "is_true"},
    ):
        initial = ConditionForm.initial_from_config(stored)
        config, errors = clean({k: "" if v is None else str(v) for k, v in initial.items()}, org)
        assert errors == []
        assert config == {
            k: v for k, v in stored.items() if not (stored["operator"] == "is_true" and k == "value")
        }


def filters_data(logic, rows, total_extra=0):
    data = {
        "f-logic": logic,
        "f-conditions-TOTAL_FORMS": str(len(rows) + total_extra),
        "f-conditions-INITIAL_FORMS": "0",
        "f-conditions-MIN_NUM_FORMS": "0",
        "f-conditions-MAX_NUM_FORMS": "1000",
    }
    blank = {  # what a browser posts for the untouched extra row: the initial values
        "kind": "contact_property",
        "field": "",
        "operator": "equals",
        "value": "",
        "activity_operator": "is_true",
        "activity": "opened",
        "topic_operator": "equals",
        "topic": "",
        "form_operator": "equals",
        "signup_form": "",
    }
    for i, row in enumerate([*rows, *[blank] * total_extra]):
        data.update({f"f-conditions-{i}-{k}": v for k, v in row.items()})
    return data


def test_filters_form_cleans_to_logic_and_conditions(org):
    rows = [
        {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"},
        {"kind": "email_activity", "activity": "opened", "activity_operator": "is_true"},
        {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "x", "DELETE": "on"},
    ]
    form = FiltersForm(filters_data("OR", rows, total_extra=1), prefix="f", organization_id=org.pk)
    assert form.is_valid(), error_messages(form)
    assert form.cleaned_data["config"] == {
        "logic": "OR",
        "conditions": [
            {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"},
            {"kind": "email_activity", "field": "opened", "operator": "is_true"},
        ],
    }


def test_filters_form_without_conditions_matches_everyone(org):
    form = FiltersForm(filters_data("AND", [], total_extra=1), prefix="f", organization_id=org.pk)
    assert form.is_valid(), error_messages(form)
    assert form.cleaned_data["config"] == {"logic": "AND", "conditions": []}


def test_filters_form_names_the_row_of_an_error(org):
    rows = [
        {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"},
        {"kind": "contact_property", "field": "plan", "operator": "lt", "value": "many"},
    ]
    form = FiltersForm(filters_data("AND", rows), prefix="f", organization_id=org.pk)
    assert not form.is_valid()
    assert error_messages(form) == ["Condition 2 · Value: Enter a number to compare with, such as 10 or 2.5."]


def test_segment_admin_builder_live_count_and_stored_json(client, django_user_model, org):
    from django.urls import reverse

    from owlat.contacts import contact_find_or_create
    from owlat.models import Membership, Segment

    for i, plan in enumerate(["pro", "pro", "free"]):
        contact_find_or_create(
            organization_id=org.pk,
            email=f"p{i}@example.com",
            source="api",
            actor="t",
            properties={"plan": plan},
        )
    user = django_user_model.objects.create_user(username="own", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    data = filters_data(
        "AND", [{"kind": "contact_property", "field": "plan", "operator": "equals", "value": "PRO"}]
    )
    data = {k.replace("f-", "filters-", 1): v for k, v in data.items()}
    count_url = reverse("admin:owlat_segment_count") + f"?organization={org.pk}"
    assert client.post(count_url, data).json() == {"count": 2, "label": "2 contacts match now"}
    bad = {**data, "filters-conditions-0-operator": "gt"}
    assert client.post(count_url, bad).json() == {
        "errors": ["Condition 1 · Value: Enter a number to compare with, such as 10 or 2.5."]
    }
    r = client.post(reverse("admin:owlat_segment_add"), {"name": "Pro", **data})
    assert r.status_code == 302
    segment = Segment.objects.get(name="Pro")
    assert segment.filters == {
        "logic": "AND",
        "conditions": [{"kind": "contact_property", "field": "plan", "operator": "equals", "value": "PRO"}],
    }
    assert segment.cached_count == 2
    html = client.get(reverse("admin:owlat_segment_change", args=[segment.pk])).content.decode()
    assert 'name="filters-conditions-0-value" value="PRO"' in html and "owlat-json" in html
    assert 'name="filters"' not in html  # no JSON typing
