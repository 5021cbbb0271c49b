"""API-33/34: ingest, list with filters, detail, review verbs, a message's agent actions."""

from __future__ import annotations

import pytest

from inbox.models import InboundMessage
from testsupport.api import ApiClient, make_key

pytestmark = pytest.mark.django_db

SCOPES = ["inbox:read", "inbox:write", "inbox:review"]


@pytest.fixture
def api(org, settings):
    settings.API_RATE_LIMIT_PER_SECOND = 1000
    settings.API_RATE_LIMIT_BURST = 1000
    _, raw = make_key(org, SCOPES)
    return ApiClient(raw)


BODY = {
    "messageId": "<api-1@example.com>",
    "from": "Jane Doe <Jane@Example.com>",
    "to": "support@acme.test",
    "subject": "Invoice",
    "textBody": "Where is my invoice?",
    "authentication": {"spf": "pass", "dkim": "pass", "dmarc": "pass"},
}


def test_ingest_then_duplicate(api):
    r = api.post("/inbox/messages", BODY)
    assert r.status_code == 201, r.content
    data = r.json()["data"]
    assert data["processingStatus"] == "received" and data["from"] == "Jane Doe <jane@example.com>"
    assert data["to"] == ["support@acme.test"] and data["draft"] is None
    again = api.post("/inbox/messages/", BODY)
    assert again.status_code == 200 and again.json()["data"]["id"] == data["id"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"messageId": None}, "messageId"),
        ({"from": "not an address"}, "from"),
        ({"to": []}, "to"),
        ({"authentication": {"dkim": "maybe"}}, "authentication"),
    ],
)
def test_ingest_bad_input_names_the_field(api, change, field):
    body = {**BODY, **change}
    body = {k: v for k, v in body.items() if v is not None}
    r = api.post("/inbox/messages", body)
    assert r.status_code == 400, r.content
    assert field in r.content.decode()


def test_ingest_too_large(api, settings):
    settings.INBOX_MAX_MESSAGE_BYTES = 10
    r = api.post("/inbox/messages", BODY)
    assert r.status_code == 400 and "too large" in r.json()["error"]["message"]


def test_list_filters_and_detail(api, org, make_message):
    a = make_message("draft_ready", draft_response="Hi")
    make_message("quarantined")
    r = api.get("/inbox/messages?processingStatus=draft_ready,failed")
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == [str(a.pk)]
    assert api.get("/inbox/messages?processingStatus=nope").status_code == 400
    d = api.get(f"/inbox/messages/{a.pk}").json()["data"]
    assert d["draft"]["response"] == "Hi" and "textBody" in d and d["draftRevisions"] == []
    assert api.get("/inbox/messages/not-a-uuid").status_code == 400


def test_review_verbs(api, org, make_message, agent_config):
    m = make_message("draft_ready", draft_response="")
    r = api.post(f"/inbox/messages/{m.pk}/approve", {})
    assert r.status_code == 422 and r.json()["error"]["message"] == "No draft to approve"
    r = api.post(f"/inbox/messages/{m.pk}/edit", {"draftResponse": "Written"})
    assert (
        r.status_code == 200
        and r.json()["data"]["draft"]["isEdited"] is True
        and "transition" not in r.json()
    )
    assert api.post(f"/inbox/messages/{m.pk}/edit", {}).status_code == 400
    r = api.post(f"/inbox/messages/{m.pk}/approve", {})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["transition"] == {"applied": "transitioned", "from": "draft_ready", "to": "approved"}
    assert body["data"]["pendingAutoSend"]["sendAt"]
    r = api.post(f"/inbox/messages/{m.pk}/undo")
    assert r.status_code == 200 and r.json()["data"]["processingStatus"] == "draft_ready"
    r = api.post(f"/inbox/messages/{m.pk}/undo")
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "not_approved"
    r = api.post(f"/inbox/messages/{m.pk}/reject", {"reason": "no"})
    assert r.status_code == 200 and r.json()["data"]["processingStatus"] == "rejected"
    q = make_message("quarantined")
    assert api.post(f"/inbox/messages/{q.pk}/release").status_code == 200
    r = api.post(f"/inbox/messages/{q.pk}/retry")
    assert r.status_code == 422 and r.json()["error"]["message"] == "Message has not failed"
    assert api.post(f"/inbox/messages/{q.pk}/block-sender").status_code == 200


def test_actions_and_scopes(api, org, make_message):
    from inbox.lifecycle import action_claim, action_complete, action_prepare

    m = make_message("classifying")
    a = action_prepare(message=m, kind="context_retrieval")
    action_claim(a.pk)
    action_complete(a.pk, output={"tier": "normal"}, duration_ms=3)
    r = api.get(f"/inbox/messages/{m.pk}/actions")
    assert r.status_code == 200
    [row] = r.json()["data"]
    assert (
        row["actionType"] == "context_retrieval"
        and row["output"] == {"tier": "normal"}
        and row["durationMs"] == 3
    )
    _, raw = make_key(org, ["inbox:read"])
    ro = ApiClient(raw)
    assert ro.post(f"/inbox/messages/{m.pk}/release").status_code == 403
    other = make_message(
        "draft_ready",
        organization=__import__("owlat.organizations", fromlist=["x"]).organization_create(name="Other"),
    )
    assert api.get(f"/inbox/messages/{other.pk}").status_code == 404
    assert InboundMessage.objects.count() == 2


def test_ingest_stores_base64_attachments_with_the_intakes_limits(api, settings, tmp_path):
    import base64

    from inbox.models import InboundAttachment

    settings.MEDIA_ROOT = str(tmp_path)
    settings.INBOX_ATTACHMENT_MAX_BYTES = 100
    pdf = b"%PDF-1.4 invoice API-ATTACHMENT"
    attachments = [
        {
            "filename": "invoice.pdf",
            "contentType": "application/pdf",
            "content": base64.b64encode(pdf).decode(),
        },
        {
            "filename": "big.zip",
            "contentType": "application/zip",
            "content": base64.b64encode(b"z" * 500).decode(),
        },
        {"filename": "run.pdf.exe", "contentType": "application/octet-stream", "content": "TVqQ"},
        {"filename": "listed.txt", "contentType": "text/plain", "size": 12},
    ]
    r = api.post(
        "/inbox/messages", {**BODY, "messageId": "<api-att@example.com>", "attachments": attachments}
    )
    assert r.status_code == 201, r.content
    rows = {
        a.filename: a for a in InboundAttachment.objects.filter(inbound_message_id=r.json()["data"]["id"])
    }
    assert rows["invoice.pdf"].is_stored and rows["invoice.pdf"].file.read() == pdf
    assert not rows["big.zip"].is_stored and rows["big.zip"].size == 500  # over the limit: metadata only
    assert rows["run.pdf.exe"].is_dangerous
    assert "listed.txt" not in rows  # metadata without content: listed on the message, no file
    detail = api.get(f"/inbox/messages/{r.json()['data']['id']}").json()["data"]
    meta = {a["filename"]: a for a in detail["attachments"]}
    assert meta["invoice.pdf"]["size"] == len(pdf) and meta["listed.txt"]["size"] == 12


@pytest.mark.parametrize(
    "attachment",
    [
        {"filename": "a.pdf", "contentType": "application/pdf", "content": "not base64!"},
        {"filename": "a.pdf", "contentType": "application/pdf", "content": 5},
        {"filename": "a.pdf", "contentType": "application/pdf", "content": "eA==", "size": -1},
    ],
)
def test_ingest_refuses_a_bad_attachment_naming_the_field(api, attachment):
    r = api.post(
        "/inbox/messages", {**BODY, "messageId": "<api-bad@example.com>", "attachments": [attachment]}
    )
    assert r.status_code == 400, r.content
    assert "attachments[0]" in r.content.decode()
