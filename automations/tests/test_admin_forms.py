"""The editor's forms (issue 8): each trigger and step form cleans into exactly the JSON the model stores,
every error names its field and says what to do, and the admin accepts a post of each."""

from __future__ import annotations

import pytest
from django.urls import reverse

from automations.admin_forms.steps import ConditionStepForm, DelayStepForm, EmailStepForm
from automations.admin_forms.triggers import (
    ContactCreatedTriggerForm,
    ContactUpdatedTriggerForm,
    EventReceivedTriggerForm,
    TopicSubscribedTriggerForm,
)
from automations.models import Automation, AutomationStep
from automations.tests.conftest import DELAY_1H
from automations.tests.test_admin import inline_data, login, row
from owlat.forms.nested import error_messages
from owlat.models import Topic
from templates.models import EmailTemplate

pytestmark = pytest.mark.django_db


@pytest.fixture
def template(org):
    return EmailTemplate.objects.create(
        organization=org, name="Welcome", subject="Hi", html_content="<p>Hi</p>"
    )


@pytest.fixture
def topic(org):
    return Topic.objects.create(organization=org, name="Newsletter")


def page_errors(response) -> list[str]:
    """The error messages an admin page shows (for assertion messages)."""
    import re

    html = response.content.decode()
    return [
        re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", m)).strip()
        for m in re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', html, re.S)
    ]


def clean(form_class, data, org, prefix="p", **kwargs):
    form = form_class(
        {f"{prefix}-{k}": v for k, v in data.items()}, prefix=prefix, organization_id=org.pk, **kwargs
    )
    valid = form.is_valid()
    return (form.cleaned_data.get("config") if valid else None), error_messages(form)


# --- trigger forms ---------------------------------------------------------------------------------------------


def test_contact_created_trigger_has_no_config(org):
    assert clean(ContactCreatedTriggerForm, {}, org) == (None, [])


def test_contact_updated_trigger_picks_a_watched_field(org):
    assert clean(ContactUpdatedTriggerForm, {"property_key": "firstName"}, org) == (
        {"propertyKey": "firstName"},
        [],
    )
    config, errors = clean(ContactUpdatedTriggerForm, {"property_key": ""}, org)
    assert config is None
    assert errors == ["Changed field: Choose the contact field whose change starts the automation."]


@pytest.mark.parametrize("name", ["signup", "a", "Order_paid-2", "x" * 100])
def test_event_trigger_accepts_what_the_events_api_accepts(org, name):
    assert clean(EventReceivedTriggerForm, {"event_name": name}, org) == ({"eventName": name}, [])


@pytest.mark.parametrize("name", ["1signup", "sign up", "x" * 101, "é", "-a", "a.b"])
def test_event_trigger_refuses_what_the_events_api_refuses(org, name):
    config, errors = clean(EventReceivedTriggerForm, {"event_name": name}, org)
    assert config is None and len(errors) == 1
    assert errors[0].startswith("Event name: ")


def test_event_trigger_requires_a_name(org):
    assert clean(EventReceivedTriggerForm, {"event_name": ""}, org) == (
        None,
        ["Event name: Enter the event name, e.g. signup."],
    )


def test_topic_trigger_stores_the_topic_id_of_this_organization(org, topic):
    from owlat.organizations import organization_create

    assert clean(TopicSubscribedTriggerForm, {"topic": str(topic.pk)}, org) == (
        {"topicId": str(topic.pk)},
        [],
    )
    other = organization_create(name="Other")
    foreign = Topic.objects.create(organization=other, name="Theirs")
    config, errors = clean(TopicSubscribedTriggerForm, {"topic": str(foreign.pk)}, org)
    assert config is None and errors == ["Topic: Choose one of this organization's topics."]


# --- step forms ------------------------------------------------------------------------------------------------


def test_email_step_stores_email_template_id(org, template):
    assert clean(EmailStepForm, {"template": str(template.pk)}, org) == (
        {"emailTemplateId": str(template.pk)},
        [],
    )
    config, _ = clean(
        EmailStepForm, {"template": str(template.pk), "subject_override": "Hey {{firstName}}"}, org
    )
    assert config == {"emailTemplateId": str(template.pk), "subjectOverride": "Hey {{firstName}}"}


def test_empty_email_step_gives_one_clear_error(org):
    assert clean(EmailStepForm, {}, org) == (None, ["Template: Choose a template."])


def test_delay_step_stores_duration_and_unit(org):
    assert clean(DelayStepForm, {"duration": "2", "unit": "hours"}, org) == (
        {"duration": 2, "unit": "hours"},
        [],
    )
    assert clean(DelayStepForm, {"duration": "1.5", "unit": "days"}, org)[0] == {
        "duration": 1.5,
        "unit": "days",
    }
    assert clean(DelayStepForm, {"duration": "0", "unit": "days"}, org)[1] == [
        "Wait: Enter a number greater than 0."
    ]
    assert clean(DelayStepForm, {"duration": "soon", "unit": "days"}, org)[1] == [
        "Wait: Enter a number, e.g. 2 or 1.5."
    ]
    assert clean(DelayStepForm, {"duration": "1", "unit": "years"}, org)[1][0].startswith("Unit: ")


def test_condition_step_stores_condition_and_branches(org, topic):
    data = {
        "kind": "topic_membership",
        "topic": str(topic.pk),
        "topic_operator": "not_equals",
        "yes_branch": "2",
    }
    config, errors = clean(ConditionStepForm, data, org, step_choices=[("0", "s0"), ("2", "s2")])
    assert errors == []
    assert config == {
        "condition": {"kind": "topic_membership", "topicId": str(topic.pk), "operator": "not_equals"},
        "yesBranchStepIndex": 2,
        "noBranchStepIndex": None,
    }


# --- the admin -------------------------------------------------------------------------------------------------


def add_data(**fields):
    data = {
        "name": "Welcome",
        "description": "",
        "steps-TOTAL_FORMS": "0",
        "steps-INITIAL_FORMS": "0",
        "steps-MIN_NUM_FORMS": "0",
        "steps-MAX_NUM_FORMS": "1000",
    }
    data.update(fields)
    return data


@pytest.mark.parametrize(
    ("trigger_type", "fields", "expected"),
    [
        ("contact_created", {}, None),
        ("contact_updated", {"trigger-property_key": "email"}, {"propertyKey": "email"}),
        ("event_received", {"trigger-event_name": "signup"}, {"eventName": "signup"}),
        ("topic_subscribed", {"trigger-topic": "TOPIC"}, "TOPIC"),
    ],
)
def test_admin_saves_each_trigger_form(client, django_user_model, org, topic, trigger_type, fields, expected):
    login(client, django_user_model, org)
    fields = {k: (str(topic.pk) if v == "TOPIC" else v) for k, v in fields.items()}
    r = client.post(
        reverse("admin:automations_automation_add"), add_data(trigger_type=trigger_type, **fields)
    )
    assert r.status_code == 302, page_errors(r)
    automation = Automation.objects.get(name="Welcome")
    if expected == "TOPIC":
        expected = {"topicId": str(topic.pk)}
    assert (automation.trigger_type, automation.trigger_config) == (trigger_type, expected)


def test_admin_names_the_trigger_field_in_its_error(client, django_user_model, org):
    login(client, django_user_model, org)
    r = client.post(
        reverse("admin:automations_automation_add"),
        add_data(trigger_type="event_received", **{"trigger-event_name": "x" * 100_000}),
    )
    assert r.status_code == 200
    assert "Event name: Use at most 100 characters" in r.content.decode()
    assert not Automation.objects.exists()


def test_admin_adds_each_step_type_through_its_form(
    client, django_user_model, org, template, make_automation
):
    from owlat.models import ContactProperty

    ContactProperty.objects.create(organization=org, key="plan", type="number")
    login(client, django_user_model, org)
    automation = make_automation([DELAY_1H])
    [first] = automation.steps.all()
    new = [
        {"step_type": "email", "email-template": str(template.pk), "email-subject_override": ""},
        {"step_type": "delay", "delay-duration": "3", "delay-unit": "days"},
        {
            "step_type": "condition",
            "condition-kind": "contact_property",
            "condition-field": "plan",
            "condition-operator": "gte",
            "condition-value": "10",
            "condition-yes_branch": "0",
            "condition-no_branch": "",
        },
    ]
    r = client.post(
        reverse("admin:automations_automation_change", args=[automation.pk]),
        inline_data(automation, [row(first)], extra=new),
    )
    assert r.status_code == 302, page_errors(r)
    steps = list(AutomationStep.objects.filter(automation=automation).order_by("step_index"))
    assert [(s.step_type, s.config) for s in steps] == [
        ("delay", DELAY_1H[1]),
        ("email", {"emailTemplateId": str(template.pk)}),
        ("delay", {"duration": 3, "unit": "days"}),
        (
            "condition",
            {
                "condition": {"kind": "contact_property", "field": "plan", "operator": "gte", "value": 10},
                "yesBranchStepIndex": 0,
                "noBranchStepIndex": None,
            },
        ),
    ]


def test_admin_empty_email_step_is_one_clear_error(client, django_user_model, org, make_automation):
    login(client, django_user_model, org)
    automation = make_automation([DELAY_1H])
    [first] = automation.steps.all()
    r = client.post(
        reverse("admin:automations_automation_change", args=[automation.pk]),
        inline_data(automation, [row(first)], extra=[{"step_type": "email"}]),
    )
    assert r.status_code == 200
    html = r.content.decode()
    assert html.count("Template: Choose a template.") == 1
    assert "No email template configured" not in html and "This field is required" not in html
    assert automation.steps.count() == 1


def test_admin_edits_a_step_without_showing_indexes_positions_or_stored_json(
    client, django_user_model, org, make_automation
):
    login(client, django_user_model, org)
    automation = make_automation([DELAY_1H])
    [step] = automation.steps.all()
    change = reverse("admin:automations_automation_change", args=[automation.pk])
    html = client.get(change).content.decode()
    assert "stored json" not in html.lower() and "&quot;unit&quot;" not in html
    assert "step index" not in html.lower() and ">Position<" not in html
    assert 'name="steps-0-config"' not in html  # no JSON typing
    r = client.post(
        change, inline_data(automation, [row(step, **{"delay-duration": "5", "delay-unit": "weeks"})])
    )
    assert r.status_code == 302, page_errors(r)
    step.refresh_from_db()
    assert step.config == {"duration": 5, "unit": "weeks"}


def test_template_autocomplete_lists_this_organizations_templates_only(
    client, django_user_model, org, template
):
    from owlat.organizations import organization_create

    other = organization_create(name="Other")
    EmailTemplate.objects.create(organization=other, name="Welcome theirs", subject="x", html_content="x")
    login(client, django_user_model, org)
    url = reverse("admin:automations_automation_template_autocomplete")
    body = client.get(url, {"organization": str(org.pk), "term": "wel"}).json()
    assert body == {
        "results": [{"id": str(template.pk), "text": "Welcome (draft)"}],
        "pagination": {"more": False},
    }
    assert client.get(url, {"organization": str(other.pk), "term": "wel"}).status_code == 403


def test_outside_draft_steps_read_as_sentences(client, django_user_model, org, template, make_automation):
    from automations.admin_forms.display import step_summary

    login(client, django_user_model, org)
    automation = make_automation(
        [
            ("email", {"emailTemplateId": str(template.pk), "subjectOverride": "Hi"}),
            ("delay", {"duration": 1, "unit": "days"}),
            (
                "condition",
                {
                    "condition": {
                        "kind": "contact_property",
                        "field": "firstName",
                        "operator": "equals",
                        "value": "x",
                    },
                    "yesBranchStepIndex": 0,
                    "noBranchStepIndex": None,
                },
            ),
            (
                "condition",
                {"condition": {"kind": "email_activity", "field": "clicked", "operator": "is_false"}},
            ),
        ],
        status="active",
    )
    steps = list(automation.steps.order_by("step_index"))
    assert [step_summary(s) for s in steps] == [
        "Send “Welcome” with the subject “Hi”",
        "Wait 1 day",
        "If First name equals “x”: yes → step 0, no → the next step",
        "If contact has not clicked a link: yes → the next step, no → the next step",
    ]
    html = client.get(reverse("admin:automations_automation_change", args=[automation.pk])).content.decode()
    assert "Wait 1 day" in html and "Send “Welcome”" in html
