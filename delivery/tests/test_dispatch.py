"""Pool worker and dispatch helper against a real SMTP server on loopback (D-06, D-07, D-08, DLV-17/18)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from delivery.models import EmailSend, TransactionalSend
from delivery.reaper import reap_stuck_sends
from delivery.services import automation_email_queue
from delivery.worker import Pacer, dispatch_batch
from testsupport import drain_queue, queued_tasks, race, run_due_retry


class FakeSleep:
    """Records the requested waits instead of waiting (the spec's delays are asserted, the test stays fast)."""

    def __init__(self):
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def no_pacing(settings):
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    settings.DELIVERY_CAMPAIGN_RATE = 0


@pytest.fixture
def automation_send(org, template, contact, smtp_sink, no_pacing):
    result = automation_email_queue(
        organization_id=str(org.pk),
        contact_id=str(contact.pk),
        automation_id="00000000-0000-0000-0000-000000000001",
        email_template_id=str(template.pk),
        subject_override=None,
    )
    assert result.status == "queued", result
    return TransactionalSend.objects.get(pk=result.send_id)


@pytest.mark.django_db
def test_automation_send_arrives_once_personalized_with_headers(automation_send, smtp_sink, contact):
    # the job was enqueued on the transactional pool with the row
    tasks = queued_tasks("transactional")
    assert [(t.func, t.args) for t in tasks] == [
        ("delivery.tasks.send_batch_task", ("transactional", [str(automation_send.pk)]))
    ]
    ran = drain_queue(queue="transactional")
    assert len(ran) == 1 and "sent 1" in ran[0].result
    [msg] = smtp_sink.wait_for(1)
    assert msg.rcpt_tos == [contact.email]
    assert msg["Subject"] == "Hello Jane"
    automation_send.refresh_from_db()
    assert msg["Message-ID"] == automation_send.message_id
    assert msg["Message-ID"].endswith("@acme.test>")
    assert msg["List-Unsubscribe"].startswith("<http") and "/unsub/" in msg["List-Unsubscribe"]
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # automation mail is marketing mail: marked as bulk, its own list and feedback id, the class in the Message-ID
    assert msg["Precedence"] == "bulk" and msg["Auto-Submitted"] == "auto-generated"
    assert msg["List-Id"] == f"Automation <{automation_send.automation_id}.acme.test>"
    assert msg["Feedback-ID"].startswith("automation:") and ".marketing@" in msg["Message-ID"]
    assert "Hi Jane Doe!" in msg.html() and 'style="color: #333333;"' in msg.html()  # CSS inlined
    assert "/t/o/" not in msg.html() and "/t/c/" not in msg.html()  # automation mail is not tracked
    assert msg.text().strip().startswith("Hi Jane!")
    assert automation_send.status == "sent"
    assert automation_send.provider_type == "smtp"
    assert automation_send.provider_message_id == automation_send.message_id.strip("<>")
    assert automation_send.handed_off_at is not None and automation_send.sent_at is not None


@pytest.mark.django_db
def test_451_twice_then_success_after_the_spec_waits(automation_send, smtp_sink):
    # Issue 12 item 5: no sleeping in the job; each retry is a due task after the spec's delay (1 s, 5 s).
    smtp_sink.reply_script = ["451", "451", "ok"]
    sleep = FakeSleep()
    summary = dispatch_batch("transactional", [str(automation_send.pk)], sleep=sleep)
    assert (summary.sent, summary.retrying) == (0, 1) and sleep.waits == []
    automation_send.refresh_from_db()
    assert automation_send.status == "queued" and automation_send.handed_off_at is None
    # parked: neither the batch top-up of another job nor the orphan sweep takes it before its retry
    assert dispatch_batch("transactional", [str(automation_send.pk)]).claimed == 0
    assert reap_stuck_sends(apply=False).counts()["orphans"] == 0
    delay, result = run_due_retry()
    assert delay == pytest.approx(1.0, abs=0.5) and "retrying 1" in result
    delay, result = run_due_retry()
    assert delay == pytest.approx(5.0, abs=0.5) and "sent 1" in result
    assert len(smtp_sink.messages) == 1
    assert [a.outcome for a in smtp_sink.attempts] == ["rejected_data", "rejected_data", "accepted"]
    automation_send.refresh_from_db()
    assert automation_send.status == "sent"


@pytest.mark.django_db
def test_a_retry_task_delivered_twice_sends_once(automation_send, smtp_sink):
    from delivery.tasks import send_batch_task
    from owlat.models import DueTask

    smtp_sink.reply_script = ["451", "ok"]
    dispatch_batch("transactional", [str(automation_send.pk)])
    task = DueTask.objects.get(func="delivery.tasks.send_batch_task")
    assert "sent 1" in send_batch_task(*task.args, **task.kwargs)
    assert "claimed 0" in send_batch_task(*task.args, **task.kwargs)
    assert smtp_sink.count_for(automation_send.email) == 1


@pytest.mark.django_db
def test_four_refusals_fail_after_the_last_spec_delay(automation_send, smtp_sink):
    smtp_sink.reply_script = ["451", "451", "451", "451"]
    dispatch_batch("transactional", [str(automation_send.pk)])
    delays = []
    for _ in range(3):
        delay, result = run_due_retry()
        delays.append(round(delay))
    assert delays == [1, 5, 30] and "failed 1" in result
    automation_send.refresh_from_db()
    assert (automation_send.status, automation_send.error_code) == ("failed", "RATE_LIMIT")
    assert len(smtp_sink.attempts) == 4 and smtp_sink.messages == []


@pytest.mark.django_db
def test_a_refusing_recipient_does_not_stall_its_batch(make_tx_send, smtp_sink, no_pacing):
    slow = make_tx_send()
    others = [make_tx_send() for _ in range(5)]
    smtp_sink.script_for(slow.email, ["451", "451", "451", "ok"])
    started = time.monotonic()
    summary = dispatch_batch("transactional", [str(slow.pk)] + [str(o.pk) for o in others])
    assert time.monotonic() - started < 5.0  # was 36 s of sleeps inside the job
    assert (summary.sent, summary.retrying) == (5, 1)
    for o in others:
        assert smtp_sink.count_for(o.email) == 1
    for _ in range(3):
        run_due_retry()
    assert smtp_sink.count_for(slow.email) == 1


@pytest.mark.django_db
def test_the_budget_is_checked_while_waiting_for_a_token(make_tx_send, smtp_sink, settings, monkeypatch):
    from delivery import worker
    from owlat.models import RateBucket

    settings.DELIVERY_TRANSACTIONAL_RATE = 1
    monkeypatch.setattr(worker, "BATCH_TIME_BUDGET_SECONDS", 0.5)
    sends = [make_tx_send() for _ in range(3)]
    RateBucket.objects.filter(key="delivery:pool:transactional").delete()
    started = time.monotonic()
    summary = dispatch_batch("transactional", [str(s.pk) for s in sends], drain=False)
    assert time.monotonic() - started < 2.0  # gave up the wait instead of sleeping past its budget
    assert summary.sent == 1 and summary.released == 2
    # the two rows it did not send, whichever it took first, are handed back as one job
    handed = set(queued_tasks("transactional")[-1].args[1])
    (sent,) = [s for s in sends if str(s.pk) not in handed]
    assert len(handed) == 2 and handed < {str(s.pk) for s in sends}
    sent.refresh_from_db()
    assert sent.status == "sent"


@pytest.mark.django_db
def test_550_fails_invalid_recipient_without_retry(automation_send, smtp_sink):
    smtp_sink.reply_script = ["550"]
    sleep = FakeSleep()
    summary = dispatch_batch("transactional", [str(automation_send.pk)], sleep=sleep)
    assert summary.failed == 1 and sleep.waits == []
    assert len(smtp_sink.attempts) == 1 and smtp_sink.messages == []
    automation_send.refresh_from_db()
    assert automation_send.status == "failed"
    assert automation_send.error_code == "INVALID_RECIPIENT"
    assert "550" in automation_send.error_message


@pytest.mark.django_db
def test_drop_after_data_is_an_unknown_outcome_never_resent(automation_send, smtp_sink):
    smtp_sink.reply_script = ["drop_after_data"]
    sleep = FakeSleep()
    summary = dispatch_batch("transactional", [str(automation_send.pk)], sleep=sleep)
    assert summary.unknown == 1 and sleep.waits == []
    smtp_sink.wait_for_attempts(1)
    automation_send.refresh_from_db()
    assert automation_send.status == "queued"
    assert automation_send.outcome_unknown
    assert automation_send.error_code == "AMBIGUOUS_TIMEOUT"
    # a second delivery of the job, and the recovery sweep, send nothing
    again = dispatch_batch("transactional", [str(automation_send.pk)], sleep=sleep)
    assert again.claimed == 0
    report = reap_stuck_sends(apply=True)
    assert report.counts() == {"orphans": 0, "lost_hand_offs": 0, "expired_unknown": 0}
    assert len(smtp_sink.attempts) == 1 and smtp_sink.messages == []


@pytest.mark.django_db
def test_drop_before_data_is_retried(automation_send, smtp_sink):
    smtp_sink.reply_script = ["drop_before_data", "ok"]
    sleep = FakeSleep()
    summary = dispatch_batch("transactional", [str(automation_send.pk)], sleep=sleep)
    assert summary.retrying == 1 and sleep.waits == []
    delay, result = run_due_retry()
    assert delay == pytest.approx(1.0, abs=0.5) and "sent 1" in result
    assert len(smtp_sink.messages) == 1


@pytest.mark.django_db
def test_a_task_delivered_twice_sends_once(automation_send, smtp_sink):
    ids = [str(automation_send.pk)]
    first = dispatch_batch("transactional", ids)
    second = dispatch_batch("transactional", ids)
    assert (first.sent, second.claimed) == (1, 0)
    assert smtp_sink.count_for(automation_send.email) == 1


@pytest.mark.django_db
def test_campaign_batch_headers_footer_and_tracking(make_campaign_send, smtp_sink, no_pacing, org, settings):
    settings.DELIVERY_OPEN_PIXEL_MIN_TEXT = 0  # the short test body gets the pixel too
    from delivery.services import CampaignSendContext

    ctx = CampaignSendContext(
        from_email="news@acme.test",
        from_name="Acme News",
        topic_id="5b0b1b8c-4a5e-4c55-9d35-2c1f6d1d2d11",
        topic_name="Weekly News",
    )
    sends = [make_campaign_send(ctx=ctx) for _ in range(3)]
    summary = dispatch_batch("campaign", [str(s.pk) for s in sends])
    assert summary.sent == 3
    messages = smtp_sink.wait_for(3)
    by_rcpt = {m.rcpt_tos[0]: m for m in messages}
    for send in sends:
        msg = by_rcpt[send.contact_email]
        assert msg["Precedence"] == "bulk"
        assert msg["Auto-Submitted"] == "auto-generated"
        assert msg["List-Id"] == "Weekly News <5b0b1b8c-4a5e-4c55-9d35-2c1f6d1d2d11.acme.test>"
        assert msg["Feedback-ID"] == f"campaign:{org.pk}:{send.campaign_id}:owlat"
        assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert f"Hi {send.contact_first_name} Doe!" in msg.html()
        assert "1 Main Street" in msg.html() and "1 Main Street" in msg.text()
        assert f"{settings.SITE_URL}/t/o/" in msg.html()  # open pixel
        assert f"{settings.SITE_URL}/t/c/" in msg.html()  # tracked link
        assert "mailto:help@acme.test" in msg.html()  # mailto stays untracked
        assert "Unsubscribe" in msg.html() and "/preferences/" in msg.html()
        send.refresh_from_db()
        assert send.status == "sent"
    from delivery.services import campaign_counters

    assert campaign_counters(sends[0].campaign_id)["sent"] == 3


@pytest.mark.django_db
def test_campaign_row_suppressed_before_dispatch(make_campaign_send, smtp_sink, no_pacing, org):
    from owlat.suppression import suppress

    send = make_campaign_send()
    suppress(organization_id=org.pk, email=send.contact_email, reason="manual")
    summary = dispatch_batch("campaign", [str(send.pk)])
    assert summary.failed == 1 and smtp_sink.attempts == []
    send.refresh_from_db()
    assert send.status == "failed" and send.error_code == "RECIPIENT_SUPPRESSED"
    assert send.error_message == "Recipient suppressed (blocklist) before dispatch"


@pytest.mark.django_db
def test_no_provider_at_dispatch_fails_the_rows(make_campaign_send, settings):
    settings.EMAIL_PROVIDER = ""
    send = make_campaign_send()
    summary = dispatch_batch("campaign", [str(send.pk)])
    assert summary.failed == 1
    send.refresh_from_db()
    assert send.error_code == "WORKPOOL_FAILED"


@pytest.mark.django_db(transaction=True)
def test_two_workers_racing_for_the_same_batch_send_each_row_once(
    org, template, context, make_contact, smtp_sink, no_pacing
):
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED claims need PostgreSQL")
    contacts, ids = _campaign_rows(org, template, context, make_contact, 20, "race")
    summaries = race(lambda _: dispatch_batch("campaign", ids))
    assert sum(s.sent for s in summaries) == 20
    assert sum(s.claimed for s in summaries) == 20
    smtp_sink.wait_for(20)
    for c in contacts:
        assert smtp_sink.count_for(c.email) == 1
    assert EmailSend.objects.filter(pk__in=ids, status="sent").count() == 20


@pytest.mark.django_db
def test_pacer_admits_the_configured_rate_with_an_injected_clock():
    clock = {"now": 1000.0}
    slept = []

    def sleep(s):
        slept.append(s)
        clock["now"] += s

    pacer = Pacer("campaign", rate=20, sleep=sleep, clock=lambda: clock["now"])
    for _ in range(20 + 40):  # burst of one second, then two more seconds at the rate
        pacer()
    assert clock["now"] == pytest.approx(1002.0, abs=0.01)


@pytest.mark.django_db
def test_transactional_job_tops_up_its_batch_with_queued_rows(make_tx_send, smtp_sink, no_pacing):
    first, second = make_tx_send(), make_tx_send()
    summary = dispatch_batch("transactional", [str(first.pk)])
    assert (summary.claimed, summary.sent) == (2, 2)
    # the second row's own job finds it already sent
    assert dispatch_batch("transactional", [str(second.pk)]).claimed == 0
    assert smtp_sink.count_for(first.email) == 1 and smtp_sink.count_for(second.email) == 1
    # one connection for the batch: a single SMTP session carried both messages
    assert len(smtp_sink.messages) == 2


@pytest.mark.django_db
def test_campaign_jobs_do_not_drain_other_rows(make_campaign_send, smtp_sink, no_pacing):
    a, b = make_campaign_send(), make_campaign_send()
    assert dispatch_batch("campaign", [str(a.pk)]).claimed == 1
    b.refresh_from_db()
    assert b.status == "queued"


@pytest.mark.django_db
def test_unknown_outcome_counts_as_finished_for_campaign_completion(make_campaign_send, smtp_sink, no_pacing):
    from delivery import lifecycle
    from delivery.services import campaign_has_queued_sends

    calls = []
    handler = lifecycle.register_completion_handler("campaign", lambda send: calls.append(send.pk))
    try:
        send = make_campaign_send()
        smtp_sink.reply_script = ["drop_after_data"]
        assert dispatch_batch("campaign", [str(send.pk)], sleep=FakeSleep()).unknown == 1
        assert calls == [send.pk]
        assert not campaign_has_queued_sends(send.campaign_id)
        assert campaign_has_queued_sends(send.campaign_id, count_unknown_as_finished=False)
    finally:
        lifecycle._completion_handlers["campaign"].remove(handler)


# --- several connections per job (issue 12: delivery ≥ the one-connection smtplib baseline) -----------------


@pytest.fixture
def fresh_connections():
    """Close the connections the test's wrapped transports left idle for the next job of this process."""
    from delivery.providers import registry

    yield
    while registry._idle:
        registry._idle.pop()[0].close()


class CountingTransports:
    """A transport factory that records, per SMTP connection the job opened, the recipients it carried."""

    def __init__(self):
        from delivery.providers import get_transport

        self._get = get_transport
        self.carried: list[list[str]] = []
        self._lock = threading.Lock()

    def __call__(self):
        transport = self._get()
        carried: list[str] = []
        with self._lock:
            self.carried.append(carried)
        send = transport.send

        def counted(message):
            carried.append(message.to)
            return send(message)

        transport.send = counted
        return transport


def _campaign_rows(org, template, context, make_contact, n, prefix):
    import uuid

    from delivery.services import CampaignRecipient, create_batch

    contacts = [make_contact(email=f"{prefix}{i}@example.com") for i in range(n)]
    result = create_batch(
        organization_id=org.pk,
        campaign_id=str(uuid.uuid4()),
        context=context,
        sends=[
            CampaignRecipient(contact_id=str(c.pk), email=c.email, email_template_id=str(template.pk))
            for c in contacts
        ],
        enqueue=False,
    )
    return contacts, list(result.values())


@pytest.mark.django_db
def test_a_job_sends_over_several_connections_each_row_once(
    org, template, context, make_contact, smtp_sink, no_pacing, fresh_connections
):
    contacts, ids = _campaign_rows(org, template, context, make_contact, 30, "multi")
    transports = CountingTransports()
    summary = dispatch_batch("campaign", ids, transport_factory=transports, connections=4)
    assert (summary.claimed, summary.sent, summary.skipped) == (30, 30, 0)
    assert len(transports.carried) == 4
    assert sum(1 for carried in transports.carried if carried) >= 2  # the connections shared the work
    assert sorted(r for carried in transports.carried for r in carried) == sorted(c.email for c in contacts)
    smtp_sink.wait_for(30)
    assert all(smtp_sink.count_for(c.email) == 1 for c in contacts)
    rows = EmailSend.objects.filter(pk__in=ids)
    assert {(r.status, r.dispatch_attempts) for r in rows} == {("sent", 1)}
    assert all(r.handed_off_at and r.sent_at and r.provider_message_id for r in rows)
    # the job delivered again (a redelivered task) finds nothing to send
    again = dispatch_batch("campaign", ids, transport_factory=transports, connections=4)
    assert (again.claimed, again.skipped) == (0, 30)
    assert len(smtp_sink.messages) == 30


@pytest.mark.django_db(transaction=True)
def test_a_duplicated_job_running_at_the_same_time_sends_each_row_once(
    org, template, context, make_contact, smtp_sink, no_pacing
):
    """The same job delivered twice and run at once by two workers, each over four connections."""
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED claims need PostgreSQL")
    contacts, ids = _campaign_rows(org, template, context, make_contact, 60, "dup")
    summaries = race(lambda _: dispatch_batch("campaign", ids, connections=4))
    assert sum(s.sent for s in summaries) == 60 and sum(s.claimed for s in summaries) == 60
    smtp_sink.wait_for(60)
    time.sleep(0.2)
    assert len(smtp_sink.messages) == 60
    assert all(smtp_sink.count_for(c.email) == 1 for c in contacts)
    assert EmailSend.objects.filter(pk__in=ids, status="sent", dispatch_attempts=1).count() == 60


@pytest.mark.django_db
def test_a_row_whose_claim_was_lost_before_its_hand_off_is_not_sent(make_tx_send, smtp_sink, no_pacing):
    """The group hand-off mark is a compare-and-set on the claim token, row by row."""
    import uuid

    from delivery.lifecycle import claim_sends, mark_handed_off_many

    kept, lost = make_tx_send(), make_tx_send()
    token, won = claim_sends("transactional", [str(kept.pk), str(lost.pk)])
    assert sorted(won) == sorted([str(kept.pk), str(lost.pk)])
    TransactionalSend.objects.filter(pk=lost.pk).update(claim_token=uuid.uuid4())  # another worker took it
    held = mark_handed_off_many("transactional", [(str(kept.pk), "<a@x>"), (str(lost.pk), "<b@x>")], token)
    assert held == {str(kept.pk)}
    lost.refresh_from_db()
    assert lost.handed_off_at is None
    assert not mark_handed_off_many("transactional", [(str(kept.pk), "<a@x>")], token)  # marked once


@pytest.mark.django_db
def test_a_sender_failure_keeps_the_other_results_and_leaves_its_row_handed_off(
    org, template, context, make_contact, smtp_sink, no_pacing, fresh_connections
):
    """A bug in a sender thread (not a provider answer) fails the job; the rows the other connections sent are
    recorded, and the row that failed stays handed off without a result (outcome unknown, never re-sent)."""
    check_a_sender_bug_fails_the_job(org, template, context, make_contact, smtp_sink, "bug")


def check_a_sender_bug_fails_the_job(org, template, context, make_contact, smtp_sink, tag: str) -> None:
    """12 campaign rows over 3 connections, the sender of the sixth raising: the job fails, the rows the other
    connections sent are recorded once, the broken row stays handed off (outcome unknown) and a redelivered job
    sends nothing again. Shared by the in-thread recorder (here) and the recorder thread (test_pipeline)."""
    contacts, ids = _campaign_rows(org, template, context, make_contact, 12, tag)
    transports = CountingTransports()
    broken = contacts[5].email

    def factory():
        transport = transports()
        send = transport.send

        def maybe_broken(message):
            if message.to == broken:
                raise RuntimeError("a bug in the sender")
            return send(message)

        transport.send = maybe_broken
        return transport

    with pytest.raises(RuntimeError, match="a bug in the sender"):
        dispatch_batch("campaign", ids, transport_factory=factory, connections=3)
    rows = {r.contact_email: r for r in EmailSend.objects.filter(pk__in=ids)}
    failed = rows[broken]
    assert failed.status == "queued" and failed.handed_off_at is not None
    sent = [r for r in rows.values() if r.status == "sent"]
    assert sent and all(smtp_sink.count_for(r.contact_email) == 1 for r in sent)
    assert smtp_sink.count_for(broken) == 0
    # nothing handed off is sent again by a redelivered job
    dispatch_batch("campaign", ids, connections=3)
    assert smtp_sink.count_for(broken) == 0


@pytest.mark.django_db
def test_a_contact_unsubscribed_after_queueing_gets_no_automation_mail_but_transactional_mail(
    automation_send, contact, make_tx_send, smtp_sink
):
    """D-11 at dispatch, read from the contact loaded with the claimed rows: automation mail (marketing scope)
    to a contact who unsubscribed since it was queued fails suppressed; transactional mail to the same contact
    in the same job still goes (it failed suppressed too: the unsubscribed set was applied to every row)."""
    from django.utils import timezone

    transactional = make_tx_send(contact=contact)
    contact.unsubscribed_at = timezone.now()
    contact.save(update_fields=["unsubscribed_at"])
    summary = dispatch_batch("transactional", [str(automation_send.pk), str(transactional.pk)])
    assert (summary.claimed, summary.sent, summary.failed) == (2, 1, 1)
    automation_send.refresh_from_db()
    assert (automation_send.status, automation_send.error_code) == ("failed", "RECIPIENT_SUPPRESSED")
    assert automation_send.error_message == "Recipient unsubscribed before dispatch"
    transactional.refresh_from_db()
    assert transactional.status == "sent"
    smtp_sink.wait_for(1)
    assert len(smtp_sink.messages) == 1


@pytest.mark.django_db
def test_blocklist_reasons_apply_per_scope_in_one_job(
    automation_send, contact, make_tx_send, make_contact, org
):
    """DLV-13 and D-11 at dispatch, one blocklist read for the job: a marketing-only reason (unengaged)
    suppresses automation mail but not transactional mail; any other reason suppresses both."""
    from owlat.suppression import suppress

    unengaged_tx = make_tx_send(contact=make_contact(email="quiet@example.com"))
    manual_tx = make_tx_send(contact=make_contact(email="blocked@example.com"))
    suppress(organization_id=org.pk, email=contact.email, reason="unengaged")
    suppress(organization_id=org.pk, email="Quiet@example.com", reason="unengaged")
    suppress(organization_id=org.pk, email="blocked@example.com", reason="manual")
    ids = [str(automation_send.pk), str(unengaged_tx.pk), str(manual_tx.pk)]
    summary = dispatch_batch("transactional", ids)
    assert (summary.claimed, summary.sent, summary.failed) == (3, 1, 2)
    rows = {str(r.pk): r for r in TransactionalSend.objects.filter(pk__in=ids)}
    assert (rows[ids[0]].status, rows[ids[0]].error_code) == ("failed", "RECIPIENT_SUPPRESSED")
    assert rows[ids[1]].status == "sent"
    assert (rows[ids[2]].status, rows[ids[2]].error_code) == ("failed", "RECIPIENT_SUPPRESSED")


def test_a_marketing_only_block_spares_transactional_mail_to_the_same_address_in_the_job(
    automation_send, contact, make_tx_send, org
):
    """D-11: one job holds an automation mail and a transactional mail to the same address, which is blocked
    for a marketing-only reason: the automation mail is suppressed, the transactional one is sent."""
    from owlat.suppression import suppress

    receipt = make_tx_send(contact=contact)
    suppress(organization_id=org.pk, email=contact.email, reason="unengaged")
    ids = [str(automation_send.pk), str(receipt.pk)]
    summary = dispatch_batch("transactional", ids)
    assert (summary.claimed, summary.sent, summary.failed) == (2, 1, 1)
    rows = {str(r.pk): r for r in TransactionalSend.objects.filter(pk__in=ids)}
    assert (rows[ids[0]].status, rows[ids[0]].error_code) == ("failed", "RECIPIENT_SUPPRESSED")
    assert rows[ids[1]].status == "sent"
