"""Operators see and recover stuck work: "Needs attention" lists failed, abandoned and stuck messages with a
Retry button; "Retry all…" and the "Retry selected" action ask for confirmation (how many, what happens) and
go through the one retry service (`inbox.retry`), which the reprocess command uses too; a retry resumes at the
failed step. With the agent off the message list says why mail stays received, and once it is on offers to
process the waiting messages."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from inbox.lifecycle import action_claim, action_prepare, message_transition
from inbox.models import ActionStatus, AgentAction, InboundMessage
from owlat.models import Membership, OrganizationSettings
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, django_user_model, org):
    user = django_user_model.objects.create_user(username="op", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def _failed(make_message, *, abandoned=False, **fields):
    m = make_message("classifying", **fields)
    a = action_prepare(message=m, kind="classify")
    action_claim(a.pk)
    message_transition(
        message_id=m.pk, to="failed", input={"failing_action_id": str(a.pk), "error_message": "model down"}
    )
    if abandoned:
        AgentAction.objects.filter(pk=a.pk).update(status=ActionStatus.ABANDONED, retry_count=3)
    return InboundMessage.objects.get(pk=m.pk)


def _stuck(make_message, **fields):
    m = make_message("drafting", **fields)
    action_prepare(message=m, kind="draft")
    InboundMessage.objects.filter(pk=m.pk).update(updated_at=timezone.now() - dt.timedelta(hours=1))
    return m


def _attention(client) -> dict:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return {item.title: item for item in response.context["dashboard"]["attention"]}


def test_needs_attention_lists_failed_abandoned_and_stuck_with_a_retry_button(operator, make_message):
    failed = _failed(make_message, subject="Refund please")
    _failed(make_message, abandoned=True, subject="Given up")
    _stuck(make_message, subject="Lost draft")
    make_message("drafting", subject="Drafting right now")  # in progress, not stuck
    other = organization_create(name="Other")
    _failed(make_message, organization=other, subject="Other org's failure")
    items = _attention(operator)
    one = items["Message “Refund please” from jane@example.com failed"]
    assert one.action_label == "Retry" and one.action_url == reverse(
        "admin:inbox_inboundmessage_verb", args=[failed.pk, "retry"]
    )
    assert "Message “Given up” from jane@example.com was given up after its retries" in items
    assert "Message “Lost draft” from jane@example.com is stuck in drafting" in items
    assert not any("Drafting right now" in t or "Other org" in t for t in items)
    assert items["Retry all 3 failed or stuck message(s)…"].link.endswith("/retry/stuck/")
    page = operator.get(reverse("admin:index")).content.decode()
    assert 'class="owlat-attention-action' in page and "Retry</button>" in page

    r = operator.post(one.action_url, {"next": reverse("admin:index")})
    assert r.status_code == 302 and r["Location"] == reverse("admin:index")
    failed.refresh_from_db()
    assert failed.processing_status == "received"
    assert AgentAction.objects.get(inbound_message=failed).status == "pending"  # resumes at classify


def test_bulk_retry_confirms_then_retries_through_the_service(operator, make_message, org):
    a = _failed(make_message, subject="One")
    b = _failed(make_message, abandoned=True, subject="Two")
    s = _stuck(make_message, subject="Three")
    other = organization_create(name="Other")
    theirs = _failed(make_message, organization=other)
    url = reverse("admin:inbox_inboundmessage_retry_bulk", args=["stuck"])
    page = operator.get(url).content.decode()
    assert "<strong>3</strong> message(s)" in page and "1 abandoned" in page and "1 stuck" in page
    assert "resumes at the step that failed" in page and "Yes, retry 3 message(s)" in page
    assert InboundMessage.objects.get(pk=a.pk).processing_status == "failed"  # GET changes nothing
    r = operator.post(url)
    assert r.status_code == 302
    assert InboundMessage.objects.get(pk=a.pk).processing_status == "received"
    assert InboundMessage.objects.get(pk=b.pk).processing_status == "received"
    assert InboundMessage.objects.get(pk=s.pk).processing_status == "drafting"  # its lost step re-enqueued
    assert InboundMessage.objects.get(pk=theirs.pk).processing_status == "failed"
    listing = operator.get(r["Location"]).content.decode()
    assert "3 message(s) sent back to the agent" in listing


def test_retry_selected_action_uses_the_admins_confirmation_pattern(operator, make_message):
    a = _failed(make_message, subject="One")
    sent = make_message("sent", subject="Done")
    url = reverse("admin:inbox_inboundmessage_changelist")
    data = {"action": "retry_selected", "_selected_action": [str(a.pk), str(sent.pk)]}
    page = operator.post(url, data).content.decode()
    assert "Retry the selected messages?" in page and "1 failed" in page and "1 not retryable" in page
    r = operator.post(url, {**data, "post": "yes"})
    assert r.status_code == 302
    assert InboundMessage.objects.get(pk=a.pk).processing_status == "received"
    assert InboundMessage.objects.get(pk=sent.pk).processing_status == "sent"


def test_agent_off_says_why_and_once_on_offers_to_process_waiting_mail(operator, org, llm_server, receive):
    first, second = receive().message, receive().message
    assert first.processing_status == "received" and not AgentAction.objects.filter(inbound_message=first)
    url = reverse("admin:inbox_inboundmessage_changelist")
    page = operator.get(url).content.decode()
    assert "because the AI feature is off" in page and "stay “received”" in page
    assert "Process 2 waiting" not in page
    settings_row = OrganizationSettings.objects.get(organization=org)
    settings_row.feature_flags = {**settings_row.feature_flags, "ai": True}
    settings_row.save(update_fields=["feature_flags"])
    page = operator.get(url).content.decode()
    assert "because the AI feature is off" not in page and "Process 2 waiting message(s)…" in page
    confirm = reverse("admin:inbox_inboundmessage_retry_bulk", args=["waiting"])
    assert "2 waiting" in operator.get(confirm).content.decode()
    operator.post(confirm)
    from testsupport.queue import drain_queue

    drain_queue(50, queue="inbox")
    for m in (first, second):
        m.refresh_from_db()
        assert m.processing_status != "received"


def test_the_reprocess_command_goes_through_the_retry_service(make_message, capsys, monkeypatch):
    from inbox import retry

    calls = []
    real = retry.message_restart
    monkeypatch.setattr(retry, "message_restart", lambda **kw: calls.append(kw) or real(**kw))
    m = _failed(make_message)
    call_command("reprocess_message", str(m.pk))
    assert "restarted (retry)" in capsys.readouterr().out and calls[0]["message_id"] == str(m.pk)
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "received"


def test_members_who_cannot_manage_the_organization_cannot_bulk_retry(
    client, django_user_model, org, make_message
):
    m = _failed(make_message)
    user = django_user_model.objects.create_user(username="ed", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="editor")
    client.force_login(user)
    url = reverse("admin:inbox_inboundmessage_retry_bulk", args=["stuck"])
    assert client.get(url).status_code == 403 and client.post(url).status_code == 403
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "failed"
