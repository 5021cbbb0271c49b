"""A worker's job outside a transaction records its results in a recorder thread of its own (issue 12,
delivery.pipeline): every row sent once and recorded once, with its counters and timeline activity, and a
sender's bug still fails the job after the other results are recorded."""

from __future__ import annotations

import pytest
from django.db import connection

from delivery.models import CampaignSendCounters, EmailSend
from delivery.tests.test_dispatch import _campaign_rows, check_a_sender_bug_fails_the_job
from delivery.worker import dispatch_batch
from owlat.models import ContactActivity


@pytest.fixture
def no_pacing(settings):
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    settings.DELIVERY_CAMPAIGN_RATE = 0


pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the recorder thread is PostgreSQL's"
)


@pytest.mark.django_db(transaction=True)
def test_a_job_outside_a_transaction_records_every_row_once_from_its_recorder_thread(
    org, template, context, make_contact, smtp_sink, no_pacing, monkeypatch
):
    from delivery import pipeline

    threads: list[str] = []
    flush = pipeline.Recorder._flush

    def noting_flush(self):
        import threading

        threads.append(threading.current_thread().name)
        flush(self)

    monkeypatch.setattr(pipeline.Recorder, "_flush", noting_flush)
    contacts, ids = _campaign_rows(org, template, context, make_contact, 120, "rec")
    summary = dispatch_batch("campaign", ids[:100], connections=4)
    assert (summary.claimed, summary.sent, summary.failed, summary.skipped) == (100, 100, 0, 0)
    assert set(threads) == {"owlat-record"}
    smtp_sink.wait_for(100)
    rows = EmailSend.objects.filter(pk__in=ids[:100])
    assert {(r.status, r.dispatch_attempts, r.outcome_unknown) for r in rows} == {("sent", 1, False)}
    assert all(r.message_id and r.handed_off_at and r.sent_at for r in rows)
    campaign_id = rows[0].campaign_id
    assert CampaignSendCounters.objects.get(campaign_id=campaign_id).sent == 100
    activities = ContactActivity.objects.filter(activity_type="email_sent")
    assert activities.count() == 100
    assert {a.metadata["sendId"] for a in activities} == set(ids[:100])
    assert {a.metadata["campaignId"] for a in activities} == {str(campaign_id)}
    assert all(a.organization_id == org.pk and a.occurred_at for a in activities)
    # a redelivered job sends nothing again; the rest goes out once too
    again = dispatch_batch("campaign", ids, connections=4)
    assert (again.claimed, again.sent, again.skipped) == (20, 20, 100)
    smtp_sink.wait_for(120)
    assert len(smtp_sink.messages) == 120
    assert all(smtp_sink.count_for(c.email) == 1 for c in contacts)
    assert CampaignSendCounters.objects.get(campaign_id=campaign_id).sent == 120


@pytest.mark.django_db(transaction=True)
def test_each_row_is_handed_off_just_before_its_message_goes_on_the_wire(
    org, template, context, make_contact, smtp_sink, no_pacing, monkeypatch
):
    """D-07: a row's hand-off is marked by the connection that sends it, right before the attempt; at no moment
    are more rows marked without an answer than the job has connections (a kill leaves at most that many
    outcome-unknown), while the job's thread composes ahead; every row is sent and recorded once."""
    import threading

    from delivery import worker

    contacts, ids = _campaign_rows(org, template, context, make_contact, 40, "mark")
    lock = threading.Lock()
    marked: set[str] = set()
    open_marks: list[int] = [0]
    most_open = [0]
    early: list[str] = []
    mark = worker.mark_handed_off

    def noting_mark(kind, send_id, token, **kwargs):
        held = mark(kind, send_id, token, **kwargs)
        with lock:
            if held:
                marked.add(send_id)
                open_marks[0] += 1
                most_open[0] = max(most_open[0], open_marks[0])
        return held

    attempt = worker.send_provider_attempt

    def checked_attempt(transport, message, **kwargs):
        with lock:
            if str(message.send_id) not in marked:
                early.append(str(message.send_id))
        try:
            return attempt(transport, message, **kwargs)
        finally:
            with lock:
                open_marks[0] -= 1

    monkeypatch.setattr(worker, "mark_handed_off", noting_mark)
    monkeypatch.setattr(worker, "send_provider_attempt", checked_attempt)
    summary = dispatch_batch("campaign", ids, connections=4)
    assert (summary.claimed, summary.sent, summary.skipped) == (40, 40, 0)
    assert early == []
    assert 1 <= most_open[0] <= 4
    smtp_sink.wait_for(40)
    assert all(smtp_sink.count_for(c.email) == 1 for c in contacts)
    rows = EmailSend.objects.filter(pk__in=ids)
    assert {(r.status, r.dispatch_attempts) for r in rows} == {("sent", 1)}
    assert all(r.handed_off_at and r.sent_at and r.handed_off_at <= r.sent_at for r in rows)


@pytest.mark.django_db(transaction=True)
def test_a_sender_bug_fails_the_job_after_the_recorder_thread_recorded_the_other_rows(
    org, template, context, make_contact, smtp_sink, no_pacing
):
    check_a_sender_bug_fails_the_job(org, template, context, make_contact, smtp_sink, "bugrec")


@pytest.mark.django_db(transaction=True)
def test_a_transactional_job_drains_the_backlog_in_rounds_over_the_connections_it_opened(
    make_tx_send, smtp_sink, no_pacing, monkeypatch
):
    """Issue 12: a job goes on with the pool's queued rows, a round of BATCH_SIZE at a time, over the same
    connections, while its last claim found all it asked for: each row claimed and sent once, the other rows'
    own jobs find nothing; a job past DRAIN_SECONDS ends after its round, and so does one whose top-up came
    back short."""
    from delivery import worker
    from delivery.models import TransactionalSend

    sends = [make_tx_send(kind="automation" if i % 2 else "transactional") for i in range(230)]
    ids = [str(s.pk) for s in sends]
    opened = []
    get = worker.get_transport

    def opening():
        opened.append(get())
        return opened[-1]

    claims = []
    claim_queued = worker.claim_queued

    def noting_claims(*args, **kwargs):
        claims.append(claim_queued(*args, **kwargs))
        return claims[-1]

    claim_topped_up = worker.claim_sends_topped_up

    def noting_top_up(*args, **kwargs):  # the job's own rows and its top-up: one statement
        won, topped = claim_topped_up(*args, **kwargs)
        claims.append(topped)
        return won, topped

    monkeypatch.setattr(worker, "claim_queued", noting_claims)
    monkeypatch.setattr(worker, "claim_sends_topped_up", noting_top_up)
    summary = dispatch_batch("transactional", ids[:1], transport_factory=opening, connections=3)
    assert (summary.claimed, summary.sent, summary.skipped) == (230, 230, 0)
    assert len(opened) == 3
    assert [len(c) for c in claims] == [99, 100, 30]  # the top-up, then two rounds; the short one ends it
    smtp_sink.wait_for(230)
    assert all(smtp_sink.count_for(s.email) == 1 for s in sends)
    rows = TransactionalSend.objects.filter(pk__in=ids)
    assert {(r.status, r.dispatch_attempts) for r in rows} == {("sent", 1)}
    assert dispatch_batch("transactional", ids[1:]).claimed == 0
    # past its drain time a job sends its own round and stops
    monkeypatch.setattr(worker, "DRAIN_SECONDS", 0.0)
    later = [make_tx_send() for _ in range(150)]
    first = dispatch_batch("transactional", [str(later[0].pk)])
    assert (first.claimed, first.sent) == (100, 100)
    rest = dispatch_batch("transactional", [str(later[-1].pk)])
    assert (rest.claimed, rest.sent) == (50, 50)
    smtp_sink.wait_for(380)
    assert len(smtp_sink.messages) == 380


@pytest.mark.django_db(transaction=True)
def test_a_small_job_records_its_results_itself_without_a_recorder_thread(
    make_tx_send, smtp_sink, no_pacing, monkeypatch
):
    """A handful of rows (RECORD_INLINE_ROWS at most) are recorded by the job's own thread over its own
    connection: no recorder thread and no database connection of its own for them; more rows get the thread."""
    import threading

    from delivery import pipeline, worker
    from delivery.models import TransactionalSend

    threads: list[str] = []
    flush = pipeline.Recorder._flush

    def noting_flush(self):
        if self._results:
            threads.append(threading.current_thread().name)
        flush(self)

    monkeypatch.setattr(pipeline.Recorder, "_flush", noting_flush)
    small = [make_tx_send(kind="automation") for _ in range(worker.RECORD_INLINE_ROWS)]
    summary = dispatch_batch("transactional", [str(s.pk) for s in small])
    assert (summary.claimed, summary.sent) == (len(small), len(small))
    assert threads == [threading.current_thread().name]
    threads.clear()
    big = [make_tx_send(kind="automation") for _ in range(worker.RECORD_INLINE_ROWS + 1)]
    summary = dispatch_batch("transactional", [str(s.pk) for s in big])
    assert (summary.claimed, summary.sent) == (len(big), len(big))
    assert threads == ["owlat-record"]
    assert TransactionalSend.objects.filter(status="sent").count() == len(small) + len(big)
    smtp_sink.wait_for(len(small) + len(big))


@pytest.mark.django_db(transaction=True)
def test_a_small_job_reads_templates_and_webhook_endpoints_with_its_rows(
    org, make_tx_send, smtp_sink, no_pacing
):
    """A job of at most RECORD_INLINE_ROWS rows reads its rows' templates, organizations and whether their
    organization has an active webhook endpoint in the statement that loads the rows (no query of their own),
    and still sees an endpoint added, or a template edited, since the previous job."""
    from django.test.utils import CaptureQueriesContext

    from owlat.models import WebhookDelivery, WebhookEndpoint
    from templates.models import EmailTemplate

    template = EmailTemplate.objects.create(
        organization=org, name="t", subject="Before", html_content="<p>before {{firstName}}</p>"
    )
    first = _template_sends(make_tx_send, template, 3)
    with CaptureQueriesContext(connection) as queries:
        summary = dispatch_batch("transactional", [str(s.pk) for s in first])
    assert (summary.claimed, summary.sent) == (3, 3)
    assert not WebhookDelivery.objects.exists()
    alone = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT")
        and ("owlat_webhookendpoint" in q["sql"] or "templates_emailtemplate" in q["sql"])
        and "delivery_transactionalsend" not in q["sql"]
    ]
    assert alone == []
    WebhookEndpoint.objects.create(organization=org, url="https://hooks.example.org/x", secret="s")
    template.html_content = "<p>after {{firstName}}</p>"
    template.save()
    second = _template_sends(make_tx_send, template, 3)
    summary = dispatch_batch("transactional", [str(s.pk) for s in second])
    assert (summary.claimed, summary.sent) == (3, 3)
    assert WebhookDelivery.objects.filter(event_type="email.sent").count() == 3
    smtp_sink.wait_for(6)
    bodies = [m.html() for m in smtp_sink.messages]
    assert sum("after" in b for b in bodies) == 3
    assert sum("before" in b for b in bodies) == 3


def _template_sends(make_tx_send, template, n):
    """`n` automation rows whose body comes from `template` at dispatch."""
    from delivery.models import TransactionalSend

    sends = [make_tx_send(kind="automation", email_template=template) for _ in range(n)]
    TransactionalSend.objects.filter(pk__in=[s.pk for s in sends]).update(html_body="", text_body="")
    return sends


@pytest.mark.django_db(transaction=True)
def test_a_small_job_claims_its_rows_and_its_top_up_in_one_statement(make_tx_send, smtp_sink, no_pacing):
    """The job's own rows and the top-up with queued rows whose job has not run yet are claimed by one
    statement; a row another job holds is neither claimed nor topped up."""
    from django.test.utils import CaptureQueriesContext

    from delivery.lifecycle import claim_sends

    own = [make_tx_send(kind="automation") for _ in range(2)]
    others = [make_tx_send(kind="automation") for _ in range(3)]
    held = make_tx_send(kind="automation")
    claim_sends("transactional", [str(held.pk)])  # another job's live claim
    with CaptureQueriesContext(connection) as queries:
        summary = dispatch_batch("transactional", [str(s.pk) for s in own] + [str(held.pk)])
    assert (summary.requested, summary.claimed, summary.sent, summary.skipped) == (3, 5, 5, 1)
    claims = [q for q in queries.captured_queries if "dispatch_attempts + 1" in q["sql"]]
    assert len(claims) == 1
    smtp_sink.wait_for(5)
    assert {m.rcpt_tos[0] for m in smtp_sink.messages} == {s.email for s in own + others}
