"""The token bucket in Redis (issue 12 item 6): with REDIS_URL set, API-04 and D-06 buckets live in Redis, taken
by one atomic Lua script; the same arithmetic as the database bucket. Uses Redis DB 13 under a prefix of its own."""

import threading
import uuid

import pytest
import redis

from owlat.models import RateBucket
from owlat.ratelimit import take_token

pytestmark = pytest.mark.django_db

REDIS_TEST_URL = "redis://127.0.0.1:6379/13"


@pytest.fixture(autouse=True)
def redis_buckets(settings):
    prefix = f"owlat-test-{uuid.uuid4().hex[:12]}:"
    settings.REDIS_URL = REDIS_TEST_URL
    settings.REDIS_KEY_PREFIX = prefix
    client = redis.Redis.from_url(REDIS_TEST_URL)
    yield client, prefix
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


def test_bucket_starts_full_then_refills_at_the_rate_in_redis(redis_buckets):
    client, prefix = redis_buckets
    results = [take_token("k", rate=1, capacity=3, now=100.0) for _ in range(4)]
    assert [r.allowed for r in results] == [True, True, True, False]
    assert [r.remaining for r in results] == [2, 1, 0, 0]
    assert results[3].wait_seconds == pytest.approx(1.0)
    half = take_token("k", rate=1, capacity=3, now=100.5)
    assert not half.allowed and half.wait_seconds == pytest.approx(0.5)
    assert take_token("k", rate=1, capacity=3, now=101.0).allowed
    later = take_token("k", rate=1, capacity=3, now=1000.0)
    assert later.allowed and later.remaining == pytest.approx(2.0)
    # a clock behind the bucket neither refills nor rewinds it
    behind = take_token("k", rate=1, capacity=3, now=900.0)
    assert behind.allowed and behind.remaining == pytest.approx(1.0)
    assert float(client.hget(f"{prefix}bucket:k", "ts")) == 1000.0
    assert 0 < client.ttl(f"{prefix}bucket:k") <= 62
    assert not RateBucket.objects.exists()  # nothing in the database


def test_sub_second_clock_values_survive_the_round_trip():
    now = 1764543210.123456
    assert take_token("p", rate=10, capacity=1, now=now).allowed
    nxt = take_token("p", rate=10, capacity=1, now=now + 0.05)
    assert not nxt.allowed and nxt.wait_seconds == pytest.approx(0.05, abs=1e-6)
    assert take_token("p", rate=10, capacity=1, now=now + 0.11).allowed


def test_concurrent_takers_never_exceed_the_bucket():
    granted: list[bool] = []
    lock = threading.Lock()

    def taker():
        for _ in range(25):
            ok = take_token("race", rate=0.001, capacity=40, now=5000.0).allowed
            with lock:
                granted.append(ok)

    threads = [threading.Thread(target=taker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 200 and sum(granted) == 40


def test_api_rate_limit_uses_the_redis_bucket(redis_buckets):
    from owlat.api.auth import bucket_key

    client, prefix = redis_buckets

    class Key:
        pk = uuid.uuid4()

    from owlat.api.auth import take_request_token

    states = [take_request_token(Key(), now=10.0) for _ in range(16)]  # burst 15 by default
    assert [s.allowed for s in states].count(True) == 15 and not states[-1].allowed
    assert client.exists(f"{prefix}bucket:{bucket_key(Key())}")


def test_pool_pacing_uses_the_redis_bucket(redis_buckets):
    from delivery.pacing import Pacer, pool_bucket_key

    client, prefix = redis_buckets
    clock = {"now": 1000.0}

    def sleep(s):
        clock["now"] += s

    pacer = Pacer("campaign", rate=20, sleep=sleep, clock=lambda: clock["now"])
    for _ in range(20 + 40):
        assert pacer()
    assert clock["now"] == pytest.approx(1002.0, abs=0.01)
    assert client.exists(f"{prefix}bucket:{pool_bucket_key('campaign')}")
    assert not RateBucket.objects.exists()
