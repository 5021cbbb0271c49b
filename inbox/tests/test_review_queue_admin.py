"""The review queue as a support team works it: approve, edit and reject return to the queue (never to "…doesn't
exist"), Undo send is on screen with its countdown while the send waits, recipients show as addresses, the page
carries no JSON, field names or spec ids, and the queue is ordered by our time of receipt (not the sender's
`Date:`)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from inbox.models import InboundMessage
from inbox.receive import message_receive, parse_raw
from owlat.models import Membership

pytestmark = pytest.mark.django_db

QUEUE = "admin:inbox_reviewqueuemessage_changelist"


@pytest.fixture
def operator(client, django_user_model, org):
    user = django_user_model.objects.create_user(username="op", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def _ready(make_message, **fields):
    return make_message(
        "draft_ready",
        to=["support@acme.test", "help@acme.test"],
        draft_response="Your invoice is under Billing.",
        security_flags={"injectionDetected": False, "spamScore": 10, "hiddenContent": []},
        classification={"category": "billing", "urgency": "normal"},
        agent_decision={"decision": "draft", "reasons": ["first_contact"]},
        **fields,
    )


def _verb(m, verb):
    return reverse("admin:inbox_reviewqueuemessage_verb", args=[m.pk, verb])


def test_approve_returns_to_the_queue_with_undo_and_its_countdown(operator, make_message):
    m = _ready(make_message, subject="Invoice")
    r = operator.post(_verb(m, "approve"))
    assert r.status_code == 302 and r["Location"] == reverse(QUEUE)
    page = operator.get(r["Location"]).content.decode()
    assert "doesn" not in page and "approved; the reply is sent after the undo window" in page
    assert 'id="undo-pending"' in page and "Undo send</button>" in page
    seconds = int(re.search(r'class="undo-countdown" data-seconds="(\d+)"', page).group(1))
    assert 1 <= seconds <= 15
    undo = reverse("admin:inbox_inboundmessage_verb", args=[m.pk, "undo"])
    assert f'action="{undo}"' in page
    back = operator.post(undo, {"next": reverse(QUEUE)})
    assert back["Location"] == reverse(QUEUE)
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "draft_ready"


def test_reject_and_edit_return_to_the_queue(operator, make_message):
    m = _ready(make_message)
    r = operator.post(_verb(m, "reject"))
    assert r["Location"] == reverse(QUEUE)
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "rejected"
    e = _ready(make_message)
    change = reverse("admin:inbox_reviewqueuemessage_change", args=[e.pk])
    r = operator.post(
        change, {"draft_subject": "Re: Invoice", "draft_response": "Edited reply", "_save": "1"}
    )
    assert r.status_code == 302 and r["Location"].startswith(reverse(QUEUE))
    assert InboundMessage.objects.get(pk=e.pk).draft_response == "Edited reply"


def test_the_page_shows_addresses_and_no_json_field_names_or_spec_ids(operator, make_message):
    m = _ready(make_message)
    page = operator.get(reverse("admin:inbox_reviewqueuemessage_change", args=[m.pk])).content.decode()
    page = page[page.index('id="reviewqueuemessage_form"') :]
    page = page[: page.index("</form>")]  # the message's fields (not the admin's own markup)
    assert "support@acme.test, help@acme.test" in page
    assert (
        "&lt;p&gt;" not in page and "<p>Hello, where can I download my invoice?</p>" in page
    )  # body as text
    assert '["support@acme.test"' not in page and "[&quot;support" not in page
    for raw in ("spamScore", "injectionDetected", "first_contact", "AGT-", "{&#x27;", "{'"):
        assert raw not in page, raw
    assert "Spam score" in page and "first contact" in page


def test_the_queue_is_ordered_by_our_time_of_receipt_not_the_senders_date(operator, org):
    def raw(n: int, date: str) -> bytes:
        return (
            f"From: jane@example.com\r\nTo: support@acme.test\r\nSubject: Mail {n}\r\n"
            f"Message-ID: <order-{n}@example.com>\r\nDate: {date}\r\n\r\nHello\r\n"
        ).encode()

    first = message_receive(
        organization_id=org.pk, parsed=parse_raw(raw(1, "Mon, 1 Jan 2035 10:00:00 +0000"))
    )
    second = message_receive(
        organization_id=org.pk, parsed=parse_raw(raw(2, "Mon, 1 Jan 2001 10:00:00 +0000"))
    )
    assert first.message.received_at < second.message.received_at  # the claimed dates are ignored
    for r in (first, second):
        InboundMessage.objects.filter(pk=r.message.pk).update(
            processing_status="draft_ready", draft_response="x"
        )
    page = operator.get(reverse(QUEUE)).content.decode()
    assert page.index("Mail 1") < page.index("Mail 2")  # the oldest waiting first
