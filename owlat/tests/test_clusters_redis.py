"""Queue stats on the Redis broker (issue 13 item 8): `/api/v1/health` and the cluster watchdog read the age of
the oldest waiting task and the number of waiting tasks from django-q2's Redis lists (LINDEX 0 of the list the
pusher takes from with BLPOP, LLEN), as they read them from the ORM broker's table. Against the local Redis, on
database 14, under list keys of each test's own; tasks are written by django-q2's own `async_task`."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
import redis
from django.test import Client
from django.utils import timezone
from django_q.brokers.redis_broker import Redis
from django_q.signing import SignedPackage
from django_q.tasks import async_task

from owlat import clusters
from owlat.jobs import QUEUES

pytestmark = pytest.mark.django_db

REDIS_TEST_URL = "redis://127.0.0.1:6379/14"


@pytest.fixture
def redis_queues(settings, monkeypatch):
    """The Redis broker configured (settings.Q_CLUSTER["redis"]) with one django-q2 Redis broker per queue."""
    tag = f"owlat-test-{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(REDIS_TEST_URL)
    brokers = {}
    for queue in QUEUES:
        broker = Redis(list_key=f"{tag}-{queue}")
        broker.connection = client
        brokers[queue] = broker
    q_cluster = {k: v for k, v in settings.Q_CLUSTER.items() if k != "orm"}
    settings.Q_CLUSTER = {**q_cluster, "redis": REDIS_TEST_URL}
    monkeypatch.setattr(clusters, "_redis_brokers", brokers)
    yield brokers
    for broker in brokers.values():
        client.delete(broker.list_key)


def test_the_oldest_waiting_task_is_the_head_of_the_list(redis_queues):
    broker = redis_queues["transactional"]
    assert clusters.oldest_task_age_seconds("transactional") is None
    assert clusters.queued_tasks(QUEUES) == dict.fromkeys(QUEUES, 0)
    before = timezone.now()
    async_task("owlat.jobs.heartbeat_task", "first", broker=broker)
    async_task("owlat.jobs.heartbeat_task", "second", broker=broker)
    second_at = timezone.now()
    assert broker.queue_size() == 2
    later = before + dt.timedelta(seconds=42)
    age = clusters.oldest_task_age_seconds("transactional", now=later)
    assert age is not None and 42 - (second_at - before).total_seconds() <= age <= 42
    assert clusters.queued_tasks(QUEUES) == {**dict.fromkeys(QUEUES, 0), "transactional": 2}
    # the pusher takes the head (BLPOP): the next task is the oldest now
    [(_, payload)] = broker.dequeue()
    assert SignedPackage.loads(payload)["args"] == ("first",)
    assert clusters.oldest_task_age_seconds("transactional", now=later) <= age
    broker.dequeue()
    assert clusters.oldest_task_age_seconds("transactional", now=later) is None
    assert clusters.queued_tasks(QUEUES)["transactional"] == 0


def test_health_on_redis_reports_an_old_task_as_stalled(redis_queues, settings):
    from owlat.jobs import heartbeat

    client = Client()
    heartbeat(clusters.cluster_heartbeat_name("campaign"))
    body = client.get("/api/v1/health").json()
    assert body["status"] == "ok"
    assert {q["name"]: q["queued"] for q in body["queues"]} == dict.fromkeys(QUEUES, 0)
    async_task("owlat.jobs.heartbeat_task", "x", broker=redis_queues["campaign"])
    queues = {q["name"]: q for q in client.get("/api/v1/health").json()["queues"]}
    assert queues["campaign"]["queued"] == 1
    assert 0 <= queues["campaign"]["oldestTaskAgeSeconds"] < 5
    assert queues["campaign"]["status"] == "ok"
    settings.HEALTH_QUEUE_AGE_DEGRADED_SECONDS = 0.0
    body = client.get("/api/v1/health").json()
    assert body["status"] == "degraded"
    assert {q["name"]: q["status"] for q in body["queues"]} == {
        "default": "ok",
        "transactional": "ok",
        "campaign": "stalled",
        "inbox": "ok",
    }


def test_the_watchdog_sees_a_redis_queue_that_nobody_consumes(redis_queues):
    """The supervisor's stall rule is fed the same age on Redis: a cluster whose queue head waits too long
    while no worker is busy or progressing is stalled."""
    async_task("owlat.jobs.heartbeat_task", "x", broker=redis_queues["default"])
    age = clusters.oldest_task_age_seconds("default", now=timezone.now() + dt.timedelta(seconds=30))
    watch = clusters.Watch(stall_seconds=10)
    idle = clusters.Activity(workers=[1], busy=[], progress_at=None, lost_tasks=[])
    now = 1000.0
    assert not watch.stalled(activity=idle, oldest_task_age=age, now=now)  # first worker seen: ready
    assert watch.stalled(activity=idle, oldest_task_age=age, now=now + 11)
