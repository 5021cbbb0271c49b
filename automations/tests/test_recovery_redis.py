"""Tasks lost on the Redis broker (issue 12 items 4 and 6): django-q2's Redis list has no acknowledgement and
no redelivery, so a task whose worker was SIGKILLed after taking it is gone. The step run it carried must still
run, exactly once: a lost retry is re-driven by the dispatcher's recovery sweep (`automations/recovery.py`),
a lost delayed dispatch by AUT-29's cron. Tasks go through the real enqueue path into lists of the local Redis
(database 7, keys of each test's own); a "SIGKILLed worker" is an LPOP nobody runs."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.utils import timezone

from automations.models import AutomationStep, AutomationStepRun
from automations.recovery import executing_lease, lost_retries_redrive
from automations.tests.conftest import DELAY_1H
from automations.tests.test_walker import EXECUTE, enter, step_runs
from automations.walker import pending_delays_process, step_execute
from delivery.models import TransactionalSend
from owlat.jobs import QUEUES, dispatch_due_tasks, run_sweeps
from owlat.models import DueTask
from testsupport.queue import drain_redis

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_TEST_URL = "redis://127.0.0.1:6379/7"
SWEEP = "automations.abandoned_step_runs"


@pytest.fixture
def redis_queues(settings, monkeypatch):
    """The Redis broker in place of the ORM broker for this process: `owlat.jobs.enqueue` pushes on commit
    (Q_BROKER_IS_TRANSACTIONAL off) to one django-q2 Redis broker per queue, as with REDIS_URL set."""
    redis = pytest.importorskip("redis")
    from django_q.brokers.redis_broker import Redis

    client = redis.Redis.from_url(REDIS_TEST_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    tag = f"owlat-test-{uuid.uuid4().hex[:10]}"
    brokers = {}
    for queue in QUEUES:
        broker = Redis(list_key=f"{tag}-{queue}")
        broker.connection = client
        brokers[queue] = broker
    settings.Q_CLUSTER = {
        **{k: v for k, v in settings.Q_CLUSTER.items() if k != "orm"},
        "redis": REDIS_TEST_URL,
    }
    settings.Q_BROKER_IS_TRANSACTIONAL = False
    monkeypatch.setattr("django_q.tasks.get_broker", lambda cluster=None: brokers[cluster or "default"])
    yield brokers
    for broker in brokers.values():
        client.delete(broker.list_key)


def waiting(broker) -> list[tuple[str, tuple]]:
    from django_q.signing import SignedPackage

    packages = [SignedPackage.loads(p) for p in broker.connection.lrange(broker.list_key, 0, -1)]
    return [(p["func"], tuple(p["args"])) for p in packages]


def lose_the_next_task(broker) -> tuple[str, tuple]:
    """A worker took the task from the list and was SIGKILLed before it ran it."""
    from django_q.signing import SignedPackage

    package = SignedPackage.loads(broker.connection.lpop(broker.list_key))
    return package["func"], tuple(package["args"])


def hand_over_due_tasks() -> None:
    """The dispatcher hands the due tasks over (a retry due in 1 s went to the queue at once when the step took
    longer than that on a loaded machine)."""
    DueTask.objects.update(due_at=timezone.now() - dt.timedelta(seconds=1))
    dispatch_due_tasks()
    assert not DueTask.objects.exists()  # D-05: the row is gone once django-q2 has the task


def automation_sends(contact) -> list[TransactionalSend]:
    return list(TransactionalSend.objects.filter(kind="automation", contact=contact))


def test_a_retry_lost_on_redis_is_redriven_by_the_sweep_and_runs_once(
    redis_queues, make_automation, contact, org, settings
):
    from templates.models import EmailTemplate

    settings.EMAIL_PROVIDER = "local"

    template = EmailTemplate.objects.create(
        organization=org, name="Hi", subject="Hi", html_content="<p>Hi</p>"
    )
    automation = make_automation(
        [("email", {"emailTemplateId": str(template.pk)}), DELAY_1H], status="active"
    )
    email_step = AutomationStep.objects.get(automation=automation, step_index=0)
    AutomationStep.objects.filter(pk=email_step.pk).update(config={})  # the first attempt fails …
    run = enter(automation, contact)
    drain_redis(redis_queues, max_tasks=1)  # the walker's hop
    [sr] = step_runs(run)
    assert (sr.status, sr.attempt, sr.retry_count) == ("executing", 0, 1)  # … and its retry is scheduled
    AutomationStep.objects.filter(pk=email_step.pk).update(config={"emailTemplateId": str(template.pk)})
    # Given the dispatcher handed the retry to the queue and the worker that took it was killed
    hand_over_due_tasks()
    assert lose_the_next_task(redis_queues["default"]) == (EXECUTE, (str(run.pk), str(sr.pk), 1))
    assert waiting(redis_queues["default"]) == []
    assert run_sweeps()[SWEEP] == "abandoned step runs 0, lost retries 0"  # not presumed lost yet
    # when the retry is still not taken a task timeout after it was due, the dispatcher's sweep hands it out again
    lost_since = timezone.now() - executing_lease() - dt.timedelta(seconds=1)
    AutomationStepRun.objects.filter(pk=sr.pk).update(retry_due_at=lost_since)
    assert run_sweeps()[SWEEP] == "abandoned step runs 0, lost retries 1"
    # once per lease: the next sweeps leave it to that task while the queue consumes nothing
    assert run_sweeps()[SWEEP] == "abandoned step runs 0, lost retries 0"
    assert waiting(redis_queues["default"]) == [(EXECUTE, (str(run.pk), str(sr.pk), 1))]
    drain_redis(redis_queues)
    # then the step ran exactly once: one email, the step run completed by its retry, the run moved on
    sr.refresh_from_db()
    assert (sr.status, sr.attempt) == ("completed", 1)
    [send] = automation_sends(contact)
    assert sr.email_send_id == str(send.pk)
    assert [(s.step_index, s.status) for s in step_runs(run)] == [(0, "completed"), (1, "pending")]
    # and the lost task turning up after all, or another re-drive, runs nothing
    assert step_execute(run.pk, sr.pk, 1) == "step run already finished"
    assert lost_retries_redrive(now=timezone.now() + 3 * executing_lease()) == 0
    assert len(automation_sends(contact)) == 1


def test_a_delayed_dispatch_lost_on_redis_is_redriven_by_the_cron_once(
    redis_queues, make_automation, contact
):
    automation = make_automation([DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    drain_redis(redis_queues)
    [sr] = step_runs(run)
    assert sr.status == "pending"
    AutomationStepRun.objects.filter(pk=sr.pk).update(delay_until=timezone.now())
    # Given the delayed dispatch was handed over when due and lost with its worker
    hand_over_due_tasks()
    assert lose_the_next_task(redis_queues["default"]) == (EXECUTE, (str(run.pk), str(sr.pk), 0))
    # when AUT-29's cron runs, it dispatches it once more, and it executes once
    assert pending_delays_process() == 1
    drain_redis(redis_queues)
    sr.refresh_from_db()
    run.refresh_from_db()
    assert sr.status == "completed"
    assert (run.steps_executed, run.current_step_index) == (1, 1)
    assert pending_delays_process() == 0
    assert step_execute(run.pk, sr.pk, 0) == "step run already finished"
    run.refresh_from_db()
    assert run.steps_executed == 1
