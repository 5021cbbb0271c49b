"""Proof that the test infrastructure of `testsupport` behaves as specified."""

import datetime as dt
import json
import smtplib
import time
import urllib.error
import urllib.request
from email.message import EmailMessage

import pytest
from django.utils import timezone

from owlat.jobs import enqueue
from owlat.models import DueTask, WorkerHeartbeat
from testsupport import Reply, drain_queue, queued_tasks


def _message(to="alice@example.com", subject="Hello"):
    msg = EmailMessage()
    msg["From"] = "sender@example.com"
    msg["To"] = to
    msg["Subject"] = subject
    msg.set_content("plain body")
    msg.add_alternative("<p>html body</p>", subtype="html")
    return msg


def _smtp(sink):
    return smtplib.SMTP(sink.host, sink.port, timeout=5)


# --- smtp_sink --------------------------------------------------------------------------------------------


def test_sink_receives_a_message_and_sets_mail_settings(smtp_sink, settings):
    assert settings.EMAIL_PROVIDER == "smtp"
    assert f"smtp://127.0.0.1:{smtp_sink.port}" == settings.EMAIL_URL
    with _smtp(smtp_sink) as client:
        client.send_message(_message(), from_addr="bounce@example.com", to_addrs=["alice@example.com"])
    [msg] = smtp_sink.wait_for(1, timeout=5)
    assert msg["Subject"] == "Hello"
    assert msg.mail_from == "bounce@example.com"
    assert msg.rcpt_tos == ["alice@example.com"]
    assert b"Subject: Hello" in msg.raw
    assert msg.text().strip() == "plain body"
    assert msg.html().strip() == "<p>html body</p>"
    assert smtp_sink.count_for("ALICE@example.com") == 1
    assert smtp_sink.count_for("bob@example.com") == 0


def test_sink_451_at_end_of_data(smtp_sink):
    smtp_sink.reply_script = ["451"]
    with _smtp(smtp_sink) as client:
        with pytest.raises(smtplib.SMTPDataError) as err:
            client.send_message(_message(), to_addrs=["alice@example.com"])
        assert err.value.smtp_code == 451
        assert err.value.smtp_error == b"4.7.1 Try again later"
        # the script is consumed: the next message on the same connection is accepted
        client.send_message(_message(subject="second"), to_addrs=["alice@example.com"])
    [msg] = smtp_sink.wait_for(1)
    assert msg["Subject"] == "second"
    assert [a.outcome for a in smtp_sink.attempts] == ["rejected_data", "accepted"]


def test_sink_550_rejects_rcpt(smtp_sink):
    smtp_sink.reply_script = ["550", "ok"]
    with _smtp(smtp_sink) as client:
        with pytest.raises(smtplib.SMTPRecipientsRefused) as err:
            client.send_message(_message(), to_addrs=["nobody@example.com"])
        assert err.value.recipients == {"nobody@example.com": (550, b"5.1.1 No such user")}
        client.send_message(_message(), to_addrs=["alice@example.com"])
    smtp_sink.wait_for(1)
    assert smtp_sink.count_for("nobody@example.com") == 0
    assert smtp_sink.count_for("alice@example.com") == 1


def test_sink_drop_after_data_is_a_disconnect_not_a_reply(smtp_sink):
    smtp_sink.reply_script = ["drop_after_data"]
    client = _smtp(smtp_sink)
    client.ehlo()
    assert client.mail("bounce@example.com")[0] == 250
    assert client.rcpt("alice@example.com")[0] == 250
    with pytest.raises(smtplib.SMTPServerDisconnected):
        client.data(_message().as_bytes())
    client.close()
    [attempt] = smtp_sink.wait_for_attempts(1)
    assert attempt.outcome == "dropped_after_data"
    assert b"Subject: Hello" in attempt.raw  # the whole body arrived before the drop
    assert smtp_sink.messages == []
    # the sink keeps serving new connections
    with _smtp(smtp_sink) as client:
        client.send_message(_message(), to_addrs=["alice@example.com"])
    smtp_sink.wait_for(1)


def test_sink_drop_before_data_and_custom_replies(smtp_sink):
    smtp_sink.reply_script = ["drop_before_data", "data:552 5.3.4 Message too big", "delay:0.2"]
    client = _smtp(smtp_sink)
    client.ehlo()
    client.mail("bounce@example.com")
    with pytest.raises(smtplib.SMTPServerDisconnected):
        client.rcpt("alice@example.com")
    client.close()
    with _smtp(smtp_sink) as client:
        with pytest.raises(smtplib.SMTPDataError) as err:
            client.send_message(_message(), to_addrs=["alice@example.com"])
        assert err.value.smtp_code == 552
        started = time.monotonic()
        client.send_message(_message(), to_addrs=["alice@example.com"])
        assert time.monotonic() - started >= 0.2
    assert [a.outcome for a in smtp_sink.attempts] == ["dropped_before_data", "rejected_data", "accepted"]


def test_sink_per_recipient_script_wins_over_global(smtp_sink):
    smtp_sink.script_for("bob@example.com", ["550"])
    smtp_sink.reply_script = ["451"]
    with _smtp(smtp_sink) as client:
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            client.send_message(_message(), to_addrs=["bob@example.com"])
        with pytest.raises(smtplib.SMTPDataError):
            client.send_message(_message(), to_addrs=["alice@example.com"])
        client.send_message(_message(), to_addrs=["bob@example.com"])
    assert smtp_sink.count_for("bob@example.com") == 1
    with pytest.raises(ValueError):
        smtp_sink.script_for("x@example.com", ["teapot"])


def test_sink_accepts_smtp_auth_without_tls(smtp_sink):
    with _smtp(smtp_sink) as client:
        client.login("user", "secret")
        client.send_message(_message(), to_addrs=["alice@example.com"])
    assert smtp_sink.count_for("alice@example.com") == 1


def test_sink_works_with_django_smtp_backend(smtp_sink):
    from django.core.mail import EmailMessage as DjangoEmailMessage
    from django.core.mail import get_connection

    conn = get_connection(
        "django.core.mail.backends.smtp.EmailBackend", host="127.0.0.1", port=smtp_sink.port
    )
    sent = conn.send_messages(
        [DjangoEmailMessage("Hi", "body", "from@example.com", [f"u{i}@example.com"]) for i in range(3)]
    )
    assert sent == 3
    assert len(smtp_sink.wait_for(3)) == 3


# --- http_receiver ----------------------------------------------------------------------------------------


def _post(url, data, headers=None):
    req = urllib.request.Request(url, data=json.dumps(data).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_http_receiver_records_and_follows_status_script(http_receiver):
    http_receiver.statuses = [500, 500, 200, Reply(202, {"id": "msg_1"})]
    codes = [_post(http_receiver.url + "/hook?x=1", {"n": i}, {"X-Sig": "s"})[0] for i in range(3)]
    assert codes == [500, 500, 200]
    status, body = _post(http_receiver.url + "/email", {"n": 3})
    assert status == 202 and json.loads(body) == {"id": "msg_1"}
    assert _post(http_receiver.url + "/hook", {})[0] == 200  # script exhausted: default
    reqs = http_receiver.wait_for(5)
    assert [r.status for r in reqs] == [500, 500, 200, 202, 200]
    assert reqs[0].method == "POST" and reqs[0].path == "/hook" and reqs[0].query == {"x": ["1"]}
    assert reqs[0].headers["x-sig"] == "s"
    assert reqs[1].json() == {"n": 1}
    assert len(http_receiver.requests_to("/hook")) == 4


def test_http_receiver_handler_decides(http_receiver):
    http_receiver.handler = lambda req: 404 if req.path == "/missing" else None
    assert _post(http_receiver.url + "/missing", {})[0] == 404
    assert _post(http_receiver.url + "/ok", {})[0] == 200


# --- drain_queue ------------------------------------------------------------------------------------------


def chain_step(n, until):
    """A task that enqueues its successor on the next queue until `until`."""
    queues = ["default", "transactional", "campaign"]
    if n < until:
        enqueue("tests.test_e2e_infra.chain_step", n + 1, until, queue=queues[(n + 1) % 3])
    return n


def failing_task():
    raise RuntimeError("boom")


@pytest.mark.django_db
def test_drain_queue_runs_a_chain_in_fifo_order():
    enqueue("tests.test_e2e_infra.chain_step", 0, 4)
    enqueue("owlat.jobs.heartbeat_task", "drained", queue="campaign")
    assert [t.func for t in queued_tasks()] == [
        "tests.test_e2e_infra.chain_step",
        "owlat.jobs.heartbeat_task",
    ]
    ran = drain_queue()
    assert [(t.func.rsplit(".", 1)[1], t.result) for t in ran] == [
        ("chain_step", 0),
        ("heartbeat_task", "heartbeat drained"),
        ("chain_step", 1),
        ("chain_step", 2),
        ("chain_step", 3),
        ("chain_step", 4),
    ]
    assert [t.queue for t in ran if t.func.endswith("chain_step")] == [
        "default",
        "transactional",
        "campaign",
        "default",
        "transactional",
    ]
    assert queued_tasks() == []
    assert WorkerHeartbeat.objects.filter(name="drained").exists()


@pytest.mark.django_db
def test_drain_queue_django_q_chain_queue_filter_limit_and_due_tasks():
    from django_q.tasks import async_chain

    async_chain([("tests.test_e2e_infra.chain_step", (10, 10)), ("owlat.jobs.heartbeat_task", ("c",))])
    ran = drain_queue()
    assert [t.result for t in ran] == [10, "heartbeat c"]

    enqueue("tests.test_e2e_infra.chain_step", 7, 7, queue="transactional")
    enqueue("tests.test_e2e_infra.chain_step", 8, 8)
    assert [t.result for t in drain_queue(queue="default")] == [8]
    assert [t.queue for t in queued_tasks()] == ["transactional"]
    assert drain_queue(max_tasks=0) == []
    assert [t.result for t in drain_queue()] == [7]

    enqueue("tests.test_e2e_infra.chain_step", 1, 1, at=timezone.now() - dt.timedelta(seconds=1))
    enqueue("tests.test_e2e_infra.chain_step", 2, 2, at=timezone.now() + dt.timedelta(hours=1))
    assert DueTask.objects.count() == 1  # the past one went straight to the queue
    assert [t.result for t in drain_queue()] == [1]
    assert DueTask.objects.count() == 1  # the future one stays
    DueTask.objects.update(due_at=timezone.now())
    assert [t.result for t in drain_queue()] == [2]


@pytest.mark.django_db
def test_drain_queue_errors():
    enqueue("tests.test_e2e_infra.failing_task")
    with pytest.raises(RuntimeError, match="boom"):
        drain_queue()
    enqueue("tests.test_e2e_infra.failing_task")
    [t] = drain_queue(raise_errors=False)
    assert not t.ok and isinstance(t.error, RuntimeError)


# --- workers ----------------------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_workers_run_tasks_on_every_queue_and_due_tasks(workers, settings):
    assert settings.DELIVERY_TRANSACTIONAL_RATE == 0 and settings.DELIVERY_CAMPAIGN_RATE == 0
    assert workers.env["DATABASE_URL"].endswith("/" + settings.DATABASES["default"]["NAME"])
    for queue in ("default", "transactional", "campaign", "inbox"):
        enqueue("owlat.jobs.heartbeat_task", f"e2e:{queue}", queue=queue)
    workers.wait_until(
        lambda: WorkerHeartbeat.objects.filter(name__startswith="e2e:").count() == 4, timeout=10
    )
    pids = set(WorkerHeartbeat.objects.filter(name__startswith="e2e:").values_list("pid", flat=True))
    assert len(pids) == 4  # four different processes (one cluster per queue)

    started = time.monotonic()
    enqueue(
        "owlat.jobs.heartbeat_task", "e2e:due", queue="campaign", at=timezone.now() + dt.timedelta(seconds=1)
    )
    assert DueTask.objects.filter(func="owlat.jobs.heartbeat_task").exists()
    workers.wait_until(lambda: WorkerHeartbeat.objects.filter(name="e2e:due").exists(), timeout=10)
    assert time.monotonic() - started >= 0.9
    assert not DueTask.objects.filter(func="owlat.jobs.heartbeat_task").exists()


@pytest.mark.e2e
@pytest.mark.worker_env(DELIVERY_CAMPAIGN_RATE=5)
@pytest.mark.django_db(transaction=True)
def test_workers_env_marker_and_sink_settings(smtp_sink, workers, settings):
    assert workers.env["EMAIL_PROVIDER"] == "smtp"
    assert workers.env["EMAIL_URL"] == smtp_sink.url
    assert workers.env["DELIVERY_CAMPAIGN_RATE"] == "5"
    assert settings.DELIVERY_CAMPAIGN_RATE == 5.0
    assert settings.DELIVERY_TRANSACTIONAL_RATE == 0.0
    # a worker sends through the sink with the URL it was given
    enqueue("tests.test_e2e_infra.send_via_env_url", "w@example.com", queue="transactional")
    [msg] = smtp_sink.wait_for(1, timeout=10)
    assert msg.rcpt_tos == ["w@example.com"]
    assert msg["X-Campaign-Rate"] == "5.0"


def send_via_env_url(to):
    """Runs in a worker: sends one mail to settings.EMAIL_URL."""
    from urllib.parse import urlsplit

    from django.conf import settings

    assert settings.EMAIL_PROVIDER == "smtp"
    parts = urlsplit(settings.EMAIL_URL)
    msg = _message(to=to)
    msg["X-Campaign-Rate"] = str(settings.DELIVERY_CAMPAIGN_RATE)
    with smtplib.SMTP(parts.hostname, parts.port, timeout=5) as client:
        client.send_message(msg, to_addrs=[to])
    return "sent"


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_workers_survive_a_crash_and_restart(workers):
    workers.kill("campaign")
    assert workers.procs["campaign"].poll() is not None
    enqueue("owlat.jobs.heartbeat_task", "after-crash", queue="campaign")
    time.sleep(0.3)
    assert not WorkerHeartbeat.objects.filter(name="after-crash").exists()
    workers.restart("campaign")
    workers.wait_until(lambda: WorkerHeartbeat.objects.filter(name="after-crash").exists(), timeout=10)


@pytest.mark.django_db
def test_http_receiver_as_posthog_stand_in(http_receiver, settings, django_capture_on_commit_callbacks):
    from owlat.analytics import capture, reset_client

    settings.POSTHOG_API_KEY = "phc_test"
    settings.POSTHOG_HOST = http_receiver.url
    settings.POSTHOG_SYNC_MODE = True
    reset_client()
    with django_capture_on_commit_callbacks(execute=True):
        capture(distinct_id="user-1", event="contact_created", properties={"source": "api"})
    [req] = http_receiver.wait_for(1)
    assert req.method == "POST" and req.path.startswith("/batch")
    body = req.json()
    [event] = body["batch"]
    assert event["event"] == "contact_created" and event["distinct_id"] == "user-1"
    assert event["properties"]["source"] == "api"
    assert body["api_key"] == "phc_test"


class TestWorkerEnvFixture:
    @pytest.fixture
    def worker_env(self, http_receiver):
        return {"WEBHOOK_TIMEOUT_SECONDS": "3", "OWLAT_E2E_RECEIVER": http_receiver.url}

    @pytest.mark.e2e
    @pytest.mark.django_db(transaction=True)
    def test_overridden_worker_env_reaches_the_workers(self, workers, http_receiver):
        assert workers.env["OWLAT_E2E_RECEIVER"] == http_receiver.url
        enqueue("tests.test_e2e_infra.post_env_to_receiver")
        [req] = http_receiver.wait_for(1, timeout=10)
        assert req.json() == {"timeout": 3.0}


def post_env_to_receiver():
    """Runs in a worker: posts a setting read from its environment to the receiver named in it."""
    import os

    from django.conf import settings

    return _post(os.environ["OWLAT_E2E_RECEIVER"] + "/env", {"timeout": settings.WEBHOOK_TIMEOUT_SECONDS})[0]
