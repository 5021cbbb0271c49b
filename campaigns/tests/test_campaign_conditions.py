"""Segment conditions on one campaign — received / opened / clicked campaign X, clicked link L of campaign X:
the SQL compile and the Python evaluator agree, stay within the organization, and are built with pickers in
the admin and posted through the API."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delivery.models import EmailSend
from owlat.conditions import evaluate_condition, filters_queryset
from owlat.forms.conditions import ConditionForm
from testsupport.api import ApiClient, make_key
from testsupport.world import sending_organization

from .test_orchestrator import send_and_drain

A, B = "https://example.org/a", "https://example.org/ab"


@pytest.fixture
def world(make_campaign, org, topic, make_contact):
    # Given a sent campaign: Ann opened and clicked A, Bob clicked B only, Cem got it, Dee failed, Eve not sent
    people = {n: make_contact(topic=topic, first_name=n) for n in ("Ann", "Bob", "Cem", "Dee")}
    campaign = make_campaign()
    send_and_drain(campaign, org)
    eve = make_contact(first_name="Eve")
    now = timezone.now()
    rows = {r.contact.first_name: r for r in EmailSend.objects.filter(campaign_id=campaign.pk)}
    EmailSend.objects.filter(pk=rows["Ann"].pk).update(
        opened_at=now, clicked_at=now, clicked_links=[{"url": A, "clickedAt": now.isoformat()}]
    )
    EmailSend.objects.filter(pk=rows["Bob"].pk).update(clicked_at=now, clicked_links=[{"url": B}])
    EmailSend.objects.filter(pk=rows["Dee"].pk).update(status="failed", failed_at=now)
    return campaign, {**people, "Eve": eve}


def _who(org, condition) -> set[str]:
    filters = {"logic": "AND", "conditions": [condition]}
    return set(filters_queryset(org.pk, filters).values_list("first_name", flat=True))


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"kind": "campaign_activity", "field": "received", "operator": "is_true"}, {"Ann", "Bob", "Cem"}),
        ({"kind": "campaign_activity", "field": "opened", "operator": "is_true"}, {"Ann"}),
        (
            {"kind": "campaign_activity", "field": "opened", "operator": "is_false"},
            {"Bob", "Cem", "Dee", "Eve"},
        ),
        ({"kind": "campaign_activity", "field": "clicked", "operator": "is_true"}, {"Ann", "Bob"}),
        ({"kind": "campaign_link", "url": A, "operator": "is_true"}, {"Ann"}),  # …/a does not match …/ab
        ({"kind": "campaign_link", "url": B, "operator": "is_true"}, {"Bob"}),
        ({"kind": "campaign_link", "url": A.upper(), "operator": "is_true"}, set()),  # exact, on both DBs
    ],
)
def test_sql_and_python_agree(world, org, condition, expected):
    campaign, people = world
    condition = {**condition, "campaignId": str(campaign.pk)}
    assert _who(org, condition) == expected
    assert {n for n, c in people.items() if evaluate_condition(condition, c)} == expected


def test_a_campaign_of_another_organization_matches_nobody(world, make_contact):
    campaign, _ = world
    other = sending_organization("Other", "other.test", sender="news")
    make_contact(organization=other, first_name="Zed")
    received = {"kind": "campaign_activity", "campaignId": str(campaign.pk), "field": "received"}
    assert _who(other, {**received, "operator": "is_true"}) == set()
    assert _who(other, {**received, "operator": "is_false"}) == {"Zed"}
    bogus = {"kind": "campaign_activity", "campaignId": "nope", "field": "opened", "operator": "is_true"}
    assert _who(other, bogus) == set()


def test_the_condition_builder_offers_campaign_and_link_pickers(world, org):
    campaign, _ = world
    form = ConditionForm(organization_id=org.pk)
    assert str(campaign.pk) in dict(form.fields["campaign"].choices)
    link_values = {v for _, group in form.fields["link"].choices[1:] for v, _ in group}
    assert f"{campaign.pk}|https://example.org/post" in link_values  # from the campaign's content
    data = {"kind": "campaign_activity", "campaign": str(campaign.pk), "campaign_field": "clicked"}
    form = ConditionForm(data={**data, "campaign_operator": "is_false"}, organization_id=org.pk)
    assert form.is_valid(), form.errors
    config = form.cleaned_data["config"]
    assert config == {
        "kind": "campaign_activity",
        "campaignId": str(campaign.pk),
        "field": "clicked",
        "operator": "is_false",
    }
    assert ConditionForm.initial_from_config(config)["campaign"] == str(campaign.pk)
    link = f"{campaign.pk}|https://example.org/post"
    form = ConditionForm(
        data={"kind": "campaign_link", "link": link, "link_operator": "is_true"}, organization_id=org.pk
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data["config"]["url"] == "https://example.org/post"
    form = ConditionForm(data={"kind": "campaign_activity", "campaign": ""}, organization_id=org.pk)
    assert not form.is_valid() and "Choose a campaign." in str(form.errors)


def test_segments_api_accepts_campaign_conditions_and_names_bad_fields(world, org):
    campaign, _ = world
    api = ApiClient(make_key(org)[1])
    filters = {
        "logic": "AND",
        "conditions": [
            {
                "kind": "campaign_activity",
                "campaignId": str(campaign.pk),
                "field": "received",
                "operator": "is_true",
            },
            {
                "kind": "campaign_activity",
                "campaignId": str(campaign.pk),
                "field": "opened",
                "operator": "is_false",
            },
        ],
    }
    created = api.post("/segments", {"name": "Did not open", "filters": filters})
    assert created.status_code == 201, created.content
    assert created.json()["data"]["cachedCount"] == 2  # Bob and Cem
    bad = {"logic": "AND", "conditions": [{**filters["conditions"][0], "field": "bounced"}]}
    refused = api.post("/segments", {"name": "x", "filters": bad})
    assert refused.status_code == 400 and "conditions[0].field" in refused.content.decode()
