"""Bad input to the campaign and inbox endpoints (API-29 … API-34) answers 400 naming the field, never 500:
wrong types, NUL bytes and lone surrogates, out-of-range numbers, unknown filter values, malformed timestamps."""

from __future__ import annotations

import pytest

from campaigns.models import Campaign
from inbox.models import InboundMessage
from testsupport.api import ApiClient, error_of, make_key, make_org

pytestmark = pytest.mark.django_db
SCOPES = ["campaigns:read", "campaigns:write", "campaigns:send", "inbox:read", "inbox:write", "inbox:review"]


@pytest.fixture
def org(settings):
    settings.API_RATE_LIMIT_PER_SECOND = 1000
    settings.API_RATE_LIMIT_BURST = 1000
    return make_org(default_from_email="hello@acme.test", default_from_name="Acme")


@pytest.fixture
def api(org):
    return ApiClient(make_key(org, SCOPES)[1])


@pytest.fixture
def campaign(api):
    response = api.post("/campaigns", {"name": "March"})
    assert response.status_code == 201, response.content
    return response.json()["data"]["id"]


@pytest.fixture
def message(api):
    body = {"messageId": "<m1@example.com>", "from": "jane@example.com", "to": "support@acme.test"}
    response = api.post("/inbox/messages", body)
    assert response.status_code == 201, response.content
    return response.json()["data"]["id"]


def bad(response, field):
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["category"] == "invalid_input"
    assert error["data"]["field"] == field, error
    return error


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": 5}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "Ja\x00ne"}, "name"),
        ({"name": "Ja\ud800ne"}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "X", "subject": ["a"]}, "subject"),
        ({"name": "X", "emailTemplateId": "nope"}, "emailTemplateId"),
        ({"name": "X", "replyTo": "not an address"}, "replyTo"),
        ({"name": "X", "archiveEnabled": "perhaps"}, "archiveEnabled"),
        ({"name": "X", "audience": {"kind": "topic", "topicId": "\x00"}}, "audience.topicId"),
        ({"name": "X", "stats": {}}, "stats"),
    ],
)
def test_campaign_create_refuses_bad_fields(api, body, field):
    bad(api.post("/campaigns", body), field)
    assert not Campaign.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scheduledAt": "next tuesday"}, "scheduledAt"),
        ({"scheduledAt": 1767225600}, "scheduledAt"),
        ({"scheduledAt": "2030-01-01T10:00:00\x00"}, "scheduledAt"),
        ({"scheduledAt": "2030-01-01T10:00:00Z", "scheduledHour": 24}, "scheduledHour"),
        ({"scheduledAt": "2030-01-01T10:00:00Z", "scheduledMinute": -1}, "scheduledMinute"),
    ],
)
def test_schedule_refuses_bad_fields(api, campaign, body, field):
    bad(api.post(f"/campaigns/{campaign}/schedule", body), field)
    assert Campaign.objects.get(pk=campaign).status == "draft"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"testType": "colour", "splitPercentage": 20, "winnerCriteria": "manual"}, "testType"),
        (
            {
                "testType": "subject",
                "variantBSubject": "B",
                "splitPercentage": "20",
                "winnerCriteria": "manual",
            },
            "splitPercentage",
        ),
        (
            {
                "testType": "subject",
                "variantBSubject": "B\x00",
                "splitPercentage": 20,
                "winnerCriteria": "manual",
            },
            "variantBSubject",
        ),
        (
            {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": "luck"},
            "winnerCriteria",
        ),
    ],
)
def test_ab_test_config_refuses_bad_fields(api, campaign, body, field):
    bad(api.post(f"/campaigns/{campaign}/ab-test/enable", body), field)


def test_declare_winner_and_query_filters_name_the_field(api, campaign):
    bad(api.post(f"/campaigns/{campaign}/ab-test/declare-winner", {"winner": "C"}), "winner")
    assert bad(api.get("/campaigns?status=draft,nope"), "status")["message"] == "Invalid status: nope"
    bad(api.get("/campaigns?search=a%00b"), "search")
    assert (
        bad(api.get(f"/campaigns/{campaign}/sends?variant=C"), "variant")["message"] == "Invalid variant: C"
    )
    assert (
        bad(api.get(f"/campaigns/{campaign}/sends?status=lost"), "status")["message"]
        == "Invalid status: lost"
    )
    bad(api.get(f"/campaigns/{campaign}/preflight?scheduledAt=soon"), "scheduledAt")
    # an empty parameter counts as absent
    assert api.get("/campaigns?status=&search=").status_code == 200
    assert api.get(f"/campaigns/{campaign}/preflight?scheduledAt=").status_code == 200


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"messageId": 5}, "messageId"),
        ({"messageId": "<a\x00@example.com>"}, "messageId"),
        ({"to": [""]}, "to"),
        ({"to": 5}, "to"),
        ({"receivedAt": "yesterday"}, "receivedAt"),
        ({"headers": {"x-a": ["list"]}}, "headers.x-a"),
        (
            {"attachments": [{"filename": "a.pdf", "contentType": "application/pdf", "size": -1}]},
            "attachments[0].size",
        ),
        ({"authentication": {"spf": "maybe"}}, "authentication.spf"),
    ],
)
def test_inbox_ingest_refuses_bad_fields(api, change, field):
    body = {"messageId": "<m2@example.com>", "from": "jane@example.com", "to": "support@acme.test", **change}
    bad(api.post("/inbox/messages", body), field)
    assert not InboundMessage.objects.exists()


def test_inbox_filters_and_review_bodies_name_the_field(api, message):
    bad(api.get("/inbox/messages?processingStatus=lost"), "processingStatus")
    bad(api.get("/inbox/messages?threadId=nope"), "threadId")
    bad(api.get("/inbox/messages?receivedAfter=soon"), "receivedAfter")
    assert api.get("/inbox/messages?processingStatus=received&processingStatus=failed").status_code == 200
    bad(api.post(f"/inbox/messages/{message}/edit", {"draftResponse": 5}), "draftResponse")
    bad(api.post(f"/inbox/messages/{message}/reject", {"reason": "x" * 1001}), "reason")
    bad(api.post(f"/inbox/messages/{message}/approve", {"draftSubject": "a\x00"}), "draftSubject")
