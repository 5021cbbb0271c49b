"""The inbox's operator screens in a real browser: the review queue's approve (back on the queue with Undo send
and its countdown), undo and edit; the dashboard's Retry button for one failed message and "Retry all…" with
its confirmation page for the rest."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)

_n = itertools.count()


def _message(org, status: str, **fields):
    from django.utils import timezone

    from inbox.models import InboundMessage

    values = {
        "message_id": f"<b{next(_n)}@example.com>",
        "from_email": "jane@example.com",
        "from_name": "Jane Doe",
        "to": ["support@acme.test"],
        "subject": "Where is my invoice?",
        "text_body": "Hello, where can I download my October invoice?",
        "html_body": "<p>Hello, where can I download my <b>October</b> invoice?</p>",
        "received_at": timezone.now(),
        "draft_response": "Your invoice is under Billing → Invoices.",
        "security_flags": {"injectionDetected": False, "spamScore": 5},
        "classification": {"category": "billing", "urgency": "normal"},
    }
    values.update(fields)
    return InboundMessage.objects.create(organization=org, processing_status=status, **values)


def _failed(org, subject: str):
    from inbox.lifecycle import action_claim, action_prepare, message_transition

    m = _message(org, "classifying", subject=subject)
    a = action_prepare(message=m, kind="classify")
    action_claim(a.pk)
    message_transition(
        message_id=m.pk, to="failed", input={"failing_action_id": str(a.pk), "error_message": "x"}
    )
    return m


def test_review_queue_approve_undo_and_edit(page, live_server, operator):
    from inbox.models import InboundMessage

    org = operator["org"]
    m = _message(org, "draft_ready", subject="Invoice question")
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/inbox/reviewqueuemessage/{m.pk}/change/")
    body = page.inner_text("body")
    assert "support@acme.test" in body and '["support' not in body and "spamScore" not in body
    assert page.locator("iframe[sandbox]").count() == 1  # the original HTML, sandboxed
    assert "<p>" not in body  # the text body is rendered, not shown as markup
    screenshot(page, "inbox-review-message")

    page.get_by_role("button", name="Approve and send").click()
    page.wait_for_load_state()
    assert page.url.endswith("/admin/inbox/reviewqueuemessage/"), page.url
    assert "doesn" not in page.inner_text("body")
    countdown = page.locator(".undo-countdown")
    first = int(countdown.inner_text())
    page.wait_for_timeout(2100)
    assert int(countdown.inner_text()) < first  # it counts down on screen
    screenshot(page, "inbox-review-undo-countdown")
    page.get_by_role("button", name="Undo send").click()
    page.wait_for_load_state()
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "draft_ready"
    assert page.url.endswith("/admin/inbox/reviewqueuemessage/")
    screenshot(page, "inbox-review-after-undo")

    page.goto(f"{live_server.url}/admin/inbox/reviewqueuemessage/{m.pk}/change/")
    page.fill("#id_draft_response", "Edited: your invoice is under Billing.")
    page.click("[name=_save]")
    page.wait_for_load_state()
    assert page.url.endswith("/admin/inbox/reviewqueuemessage/"), page.url
    assert InboundMessage.objects.get(pk=m.pk).draft_response == "Edited: your invoice is under Billing."


def test_stuck_message_retry_one_and_bulk(page, live_server, operator):
    from django.utils import timezone

    from inbox.models import InboundMessage

    org = operator["org"]
    one = _failed(org, "Refund request")
    two = _failed(org, "Address change")
    stuck = _message(org, "drafting", subject="Lost draft")
    from inbox.lifecycle import action_prepare

    action_prepare(message=stuck, kind="draft")
    InboundMessage.objects.filter(pk=stuck.pk).update(updated_at=timezone.now() - dt.timedelta(hours=1))
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/")
    attention = page.locator("#owlat-attention")
    assert "Message “Refund request” from jane@example.com failed" in attention.inner_text()
    assert "is stuck in drafting" in attention.inner_text()
    screenshot(page, "inbox-needs-attention-retry")
    row = attention.locator("li", has_text="Refund request")
    row.get_by_role("button", name="Retry").click()
    page.wait_for_load_state()
    assert page.url.rstrip("/").endswith("/admin")
    assert InboundMessage.objects.get(pk=one.pk).processing_status == "received"

    page.get_by_role("link", name="Retry all 2 failed or stuck message(s)…").click()
    page.wait_for_load_state()
    text = page.inner_text("#content-main")
    assert "2 message(s)" in text and "resumes at the step that failed" in text
    screenshot(page, "inbox-retry-all-confirm")
    page.click("#retry-confirm")
    page.wait_for_load_state()
    assert "2 message(s) sent back to the agent" in page.inner_text("body")
    assert InboundMessage.objects.get(pk=two.pk).processing_status == "received"
    assert "failed or are stuck" not in page.inner_text("body")  # the stuck one's step is enqueued again
    screenshot(page, "inbox-retry-all-done")
