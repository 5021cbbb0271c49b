"""The campaign API (API-29 … API-31) replayed in order over real HTTP against a live server, as the SDKs send
requests (Bearer key, JSON body, no trailing slash unless stated)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
import requests

from campaigns import abtest
from testsupport.api import make_key, refill_bucket

pytestmark = pytest.mark.django_db(transaction=True)
TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SCOPES = ["campaigns:read", "campaigns:write", "campaigns:send"]


class Api:
    def __init__(self, base_url, key, api_key):
        self.base = f"{base_url}/api/v1"
        self.key = key
        self.api_key = api_key

    def call(self, method, path, body=None, params=None, key=None):
        import json

        refill_bucket(self.api_key)
        return requests.request(
            method,
            self.base + path,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {key or self.key}", "Content-Type": "application/json"},
            params=params,
            allow_redirects=False,
            timeout=30,
        )


@pytest.fixture
def api(live_server, org, template, topic, make_contact):
    for i in range(3):
        make_contact(topic=topic, first_name=f"P{i}")
    api_key, raw = make_key(org, SCOPES)
    return Api(live_server.url, raw, api_key)


def test_campaign_api_replay(api, org, template, topic):
    from testsupport.queue import drain_queue

    # create: validation names the field; read-only fields refused
    r = api.call("POST", "/campaigns", {"subject": "x"})
    assert r.status_code == 400 and r.json()["error"]["data"]["field"] == "name"
    r = api.call("POST", "/campaigns", {"name": "X", "status": "sent"})
    assert r.status_code == 400 and r.json()["error"]["message"] == "status is read-only"
    r = api.call("POST", "/campaigns", {"name": "X", "fromEmail": "not-an-email"})
    assert r.status_code == 400 and r.json()["error"]["data"]["field"] == "fromEmail"
    r = api.call("POST", "/campaigns", {"name": "X", "audience": {"kind": "topic", "topicId": "nope"}})
    assert r.status_code == 400 and r.json()["error"]["data"]["field"] == "audience.topicId"
    body = {
        "name": "March",
        "emailTemplateId": str(template.pk),
        "fromEmail": "news@acme.test",
        "fromName": "Acme",
        "audience": {"kind": "topic", "topicId": str(topic.pk)},
        "subject": None,
    }
    r = api.call("POST", "/campaigns", body)
    assert r.status_code == 201, r.text
    c = r.json()["data"]
    cid = c["id"]
    assert c["status"] == "draft" and c["abTest"] is None and c["stats"]["hardBounced"] == 0
    assert TS.match(c["createdAt"]) and c["subject"] is None and c["audience"] == body["audience"]
    assert set(c) >= {
        "archiveUrl",
        "scheduledAt",
        "useRecipientTimezone",
        "contentBlockReason",
        "statsUpdatedAt",
    }
    # read, list, filter, search, trailing slash
    assert api.call("GET", f"/campaigns/{cid}").json()["data"]["name"] == "March"
    r = api.call("GET", "/campaigns/", params={"status": "draft", "search": "mar"})
    assert [x["id"] for x in r.json()["data"]] == [cid] and r.json()["pagination"]["isDone"] is True
    assert api.call("GET", "/campaigns", params={"status": "nope"}).status_code == 400
    assert api.call("GET", "/campaigns/not-a-uuid").json()["error"]["message"] == "Invalid campaign ID format"
    r = api.call("GET", "/campaigns/00000000-0000-0000-0000-000000000000")
    assert r.status_code == 404 and r.json()["error"]["message"] == "Campaign not found"
    # update (draft only)
    r = api.call("PATCH", f"/campaigns/{cid}", {"subject": "Hello {{firstName}}"})
    assert r.status_code == 200 and r.json()["data"]["subject"] == "Hello {{firstName}}"
    # pre-flight without side effects
    r = api.call("GET", f"/campaigns/{cid}/preflight")
    assert r.json() == {
        "data": {"ready": True, "reason": None, "message": None, "warnings": r.json()["data"]["warnings"]}
    }
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).isoformat()
    r = api.call("GET", f"/campaigns/{cid}/preflight", params={"scheduledAt": past})
    assert r.status_code == 200 and r.json()["data"]["reason"] == "scheduled_in_past"
    # A/B enable/disable
    r = api.call(
        "POST",
        f"/campaigns/{cid}/ab-test/enable",
        {"testType": "subject", "splitPercentage": 20, "winnerCriteria": "manual"},
    )
    assert (
        r.status_code == 400
        and r.json()["error"]["message"] == "Variant B subject is required for subject tests"
    )
    r = api.call(
        "POST",
        f"/campaigns/{cid}/ab-test/enable",
        {"testType": "subject", "variantBSubject": "B", "splitPercentage": 60, "winnerCriteria": "manual"},
    )
    assert r.json()["error"]["message"] == "Split percentage must be between 10 and 50"
    # a test decided automatically needs its window: without one the remainder would never be mailed
    r = api.call(
        "POST",
        f"/campaigns/{cid}/ab-test/enable",
        {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": "open_rate"},
    )
    assert r.status_code == 400 and "testDuration" in r.text
    assert r.json()["error"]["message"] == abtest.DURATION_REQUIRED
    r = api.call(
        "POST",
        f"/campaigns/{cid}/ab-test/enable",
        {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": "manual"},
    )
    assert r.status_code == 200 and r.json()["transition"] == {
        "applied": "transitioned",
        "from": None,
        "to": "pending",
    }
    assert r.json()["data"]["abTest"]["status"] == "pending"
    r = api.call("POST", f"/campaigns/{cid}/ab-test/disable")
    assert r.json()["transition"]["to"] is None and r.json()["data"]["abTest"] is None
    r = api.call("POST", f"/campaigns/{cid}/ab-test/declare-winner", {"winner": "A"})
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "not_ab_test"
    # wrong-state transitions
    r = api.call("POST", f"/campaigns/{cid}/cancel")
    assert r.status_code == 422
    assert r.json()["error"] == {
        "category": "invalid_state",
        "message": "Only scheduled, sending or paused campaigns can be cancelled",
        "data": {"reason": "illegal_edge", "from": "draft", "to": "cancelled"},
    }
    r = api.call("POST", f"/campaigns/{cid}/schedule", {"scheduledAt": past})
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "scheduled_in_past"
    r = api.call("POST", f"/campaigns/{cid}/schedule", {})
    assert r.status_code == 400 and r.json()["error"]["data"]["field"] == "scheduledAt"
    # schedule, reschedule, unschedule
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)).isoformat()
    r = api.call(
        "POST",
        f"/campaigns/{cid}/schedule",
        {"scheduledAt": soon, "useRecipientTimezone": True, "scheduledHour": 9, "scheduledMinute": 30},
    )
    assert r.status_code == 200 and r.json()["transition"] == {
        "applied": "transitioned",
        "from": "draft",
        "to": "scheduled",
    }
    assert r.json()["data"]["scheduledHour"] == 9 and r.json()["data"]["useRecipientTimezone"] is True
    r = api.call("POST", f"/campaigns/{cid}/schedule/", {"scheduledAt": soon})
    assert r.json()["transition"]["applied"] == "rescheduled"
    assert api.call("POST", f"/campaigns/{cid}/unschedule").json()["data"]["status"] == "draft"
    # send now
    r = api.call("POST", f"/campaigns/{cid}/send")
    assert r.status_code == 200 and r.json()["transition"] == {
        "applied": "transitioned",
        "from": "draft",
        "to": "sending",
    }
    r = api.call("PUT", f"/campaigns/{cid}", {"name": "Renamed"})
    assert (
        r.status_code == 422
        and r.json()["error"]["message"] == "Cannot modify a campaign that is not in draft status"
    )
    assert r.json()["error"]["data"]["reason"] == "not_draft"
    r = api.call("DELETE", f"/campaigns/{cid}")
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "campaign_sending"
    r = api.call("POST", f"/campaigns/{cid}/send")
    assert r.json()["error"]["message"] == "Only draft or scheduled campaigns can be sent"
    drain_queue(max_tasks=1000)
    assert api.call("GET", f"/campaigns/{cid}").json()["data"]["status"] == "sent"
    # stats (ever reached) and send rows with keyset pagination
    r = api.call("GET", f"/campaigns/{cid}/stats")
    stats = r.json()["data"]
    assert stats["source"] == "rows" and stats["sent"] == 3 and stats["deliveryRate"] == 0.0
    assert stats["variants"] is None
    seen, cursor = [], None
    while True:
        params = {"limit": 1, **({"cursor": cursor} if cursor else {})}
        page = api.call("GET", f"/campaigns/{cid}/sends", params=params).json()
        seen += [row["email"] for row in page["data"]]
        if page["pagination"]["isDone"]:
            break
        cursor = page["pagination"]["cursor"]
    assert len(seen) == len(set(seen)) == 3
    row = api.call("GET", f"/campaigns/{cid}/sends", params={"search": seen[0]}).json()["data"][0]
    assert (
        row["status"] == "sent"
        and row["personalizedSubject"].startswith("Hello P")
        and row["clickedLinks"] == []
    )
    bad = api.call("GET", f"/campaigns/{cid}/sends", params={"cursor": "forged"})
    assert bad.status_code == 400 and bad.json()["error"]["message"] == "Invalid cursor"
    # duplicate, delete
    r = api.call("POST", f"/campaigns/{cid}/duplicate")
    assert r.status_code == 201 and r.json()["data"]["name"] == "Copy of March"
    copy_id = r.json()["data"]["id"]
    # cancel a scheduled copy: final (CMP-11)
    assert api.call("POST", f"/campaigns/{copy_id}/schedule", {"scheduledAt": soon}).status_code == 200
    r = api.call("POST", f"/campaigns/{copy_id}/cancel")
    assert r.status_code == 200 and r.json()["transition"] == {
        "applied": "transitioned",
        "from": "scheduled",
        "to": "cancelled",
    }
    assert r.json()["data"]["status"] == "cancelled" and TS.match(r.json()["data"]["cancelledAt"])
    r = api.call("POST", f"/campaigns/{copy_id}/send")
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "terminal"
    assert r.json()["error"]["message"] == "Only draft or scheduled campaigns can be sent"
    assert api.call("DELETE", f"/campaigns/{copy_id}").json() == {"data": {"id": copy_id, "deleted": True}}
    # scope
    _, read_only = make_key(org, ["campaigns:read"])
    r = api.call("POST", "/campaigns", {"name": "Y"}, key=read_only)
    assert r.status_code == 403 and "campaigns:write" in r.json()["error"]["message"]


def test_ab_campaign_api_replay(api, org, template, topic, make_contact):
    """API-30 over HTTP: an A/B campaign sent, its per-variant stats, the send rows of one variant, the winner
    declared (the remainder then gets it) and declared again (422); API-31's ever-reached stats."""
    from django.utils import timezone

    from delivery.lifecycle import SendRef, send_transition
    from delivery.models import EmailSend
    from testsupport.queue import drain_queue

    for i in range(9):
        make_contact(topic=topic, first_name=f"Q{i}")
    body = {
        "name": "April",
        "emailTemplateId": str(template.pk),
        "fromEmail": "news@acme.test",
        "audience": {"kind": "topic", "topicId": str(topic.pk)},
    }
    cid = api.call("POST", "/campaigns", body).json()["data"]["id"]
    config = {
        "testType": "subject",
        "variantBSubject": "Other",
        "splitPercentage": 30,
        "winnerCriteria": "manual",
    }
    r = api.call("POST", f"/campaigns/{cid}/ab-test/enable", config)
    assert r.status_code == 200 and r.json()["data"]["abTest"]["splitPercentage"] == 30
    r = api.call("POST", f"/campaigns/{cid}/ab-test/declare-winner", {"winner": "B"})
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "not_testing"
    assert api.call("POST", f"/campaigns/{cid}/send").status_code == 200
    drain_queue(max_tasks=1000)
    data = api.call("GET", f"/campaigns/{cid}").json()["data"]
    assert data["status"] == "sending" and data["abTest"]["status"] == "testing"
    rows = EmailSend.objects.filter(campaign_id=cid)
    tested = rows.count()
    assert 0 < tested < 12 and set(rows.values_list("ab_variant", flat=True)) <= {"A", "B"}
    # ever reached: a row opened without a delivery event counts as delivered too
    opened = rows.filter(ab_variant="B").first() or rows.first()
    assert send_transition(SendRef("campaign", str(opened.pk)), "opened", {"at": timezone.now()}).ok
    stats = api.call("GET", f"/campaigns/{cid}/stats").json()["data"]
    assert stats["sent"] == tested and stats["delivered"] == 1 and stats["opened"] == 1
    assert stats["openRate"] == 100.0 and stats["deliveryRate"] == round(100 / tested, 2)
    variants = stats["variants"]
    assert variants["A"]["sent"] + variants["B"]["sent"] == tested
    assert variants[opened.ab_variant]["openRate"] == 100.0
    r = api.call("GET", f"/campaigns/{cid}/sends", params={"variant": "B"})
    assert {row["abVariant"] for row in r.json()["data"]} <= {"B"}
    assert len(r.json()["data"]) == rows.filter(ab_variant="B").count()
    r = api.call("POST", f"/campaigns/{cid}/ab-test/declare-winner", {"winner": "C"})
    assert r.status_code == 400 and r.json()["error"]["data"]["field"] == "winner"
    r = api.call("POST", f"/campaigns/{cid}/ab-test/declare-winner", {"winner": "B"})
    assert r.status_code == 200 and r.json()["transition"] == {
        "applied": "transitioned",
        "from": "testing",
        "to": "winner_selected",
    }
    assert r.json()["data"]["abTest"]["winner"] == "B"
    drain_queue(max_tasks=1000)
    data = api.call("GET", f"/campaigns/{cid}").json()["data"]
    assert data["status"] == "sent" and rows.count() == 12
    assert rows.filter(ab_variant=None).count() == 0 and rows.filter(ab_variant="B").count() >= 12 - tested
    r = api.call("POST", f"/campaigns/{cid}/ab-test/declare-winner", {"winner": "A"})
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "not_testing"
