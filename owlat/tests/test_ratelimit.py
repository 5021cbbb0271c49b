"""The database token bucket (API-04 per key, D-06 pool pacing): injected clocks and two processes."""

import json
import subprocess
import sys

import pytest

from owlat.models import RateBucket
from owlat.ratelimit import take_token, wait_for_token
from testsupport import BASE_DIR, wait_until, worker_environment

pytestmark = pytest.mark.django_db


def test_bucket_starts_full_then_refills_at_the_rate():
    key = "k"
    # capacity 3 at 1 token/s: three immediate takes, the fourth waits one second
    results = [take_token(key, rate=1, capacity=3, now=100.0) for _ in range(4)]
    assert [r.allowed for r in results] == [True, True, True, False]
    assert [r.remaining for r in results] == [2, 1, 0, 0]
    assert results[3].wait_seconds == pytest.approx(1.0)
    assert results[3].full_in_seconds == pytest.approx(3.0)

    half = take_token(key, rate=1, capacity=3, now=100.5)
    assert not half.allowed
    assert half.wait_seconds == pytest.approx(0.5)
    one = take_token(key, rate=1, capacity=3, now=101.0)
    assert one.allowed and one.remaining == pytest.approx(0.0)
    # a long pause refills only up to the capacity
    later = take_token(key, rate=1, capacity=3, now=1000.0)
    assert later.allowed and later.remaining == pytest.approx(2.0)
    assert later.full_in_seconds == pytest.approx(1.0)


def test_cost_and_independent_keys():
    assert take_token("a", rate=10, capacity=15, now=0.0, cost=15).allowed
    assert not take_token("a", rate=10, capacity=15, now=0.0).allowed
    assert take_token("b", rate=10, capacity=15, now=0.0).allowed  # another key, its own bucket
    big = take_token("a", rate=10, capacity=15, now=0.5, cost=6)
    assert not big.allowed and big.wait_seconds == pytest.approx(0.1)
    assert take_token("a", rate=10, capacity=15, now=0.6, cost=6).allowed


def test_rate_zero_is_unlimited_and_stores_nothing():
    results = [take_token("free", rate=0, capacity=1, now=0.0) for _ in range(100)]
    assert all(r.allowed and r.wait_seconds == 0 for r in results)
    assert not RateBucket.objects.filter(key="free").exists()


def test_a_clock_behind_the_bucket_neither_refills_nor_rewinds():
    assert take_token("skew", rate=1, capacity=2, now=50.0).allowed
    assert take_token("skew", rate=1, capacity=2, now=50.0).allowed
    # another process whose clock is 10 s behind: no refill, no negative elapsed time
    behind = take_token("skew", rate=1, capacity=2, now=40.0)
    assert not behind.allowed and behind.remaining == pytest.approx(0.0)
    assert RateBucket.objects.get(key="skew").updated_at == 50.0
    assert take_token("skew", rate=1, capacity=2, now=51.0).allowed


def test_wait_for_token_sleeps_until_a_token_is_free():
    clock = [10.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        clock[0] += seconds

    assert wait_for_token("w", rate=4, capacity=1, sleep=sleep, clock=lambda: clock[0]) == 0
    waited = wait_for_token("w", rate=4, capacity=1, sleep=sleep, clock=lambda: clock[0])
    assert waited == pytest.approx(0.25)
    assert sum(slept) == pytest.approx(0.25)


TAKER = r"""
import json, os, sys, time
import django
django.setup()
from owlat.ratelimit import take_token
ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
fixed = moving = 0
for k in range(100):
    # one bucket with a frozen clock: only the initial capacity can ever be taken
    fixed += take_token("shared:fixed", rate=1, capacity=30, now=5000.0).allowed
    # one bucket on a shared virtual clock running 1 s in 10 ms steps
    moving += take_token("shared:moving", rate=10, capacity=5, now=1000.0 + k * 0.01).allowed
print(json.dumps({"fixed": fixed, "moving": moving}))
"""


@pytest.mark.django_db(transaction=True)
def test_two_processes_share_one_bucket(tmp_path):
    env = worker_environment()
    procs = []
    for i in range(2):
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", TAKER, str(tmp_path / f"ready{i}"), str(tmp_path / "go")],
                cwd=BASE_DIR,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        wait_until(lambda: all((tmp_path / f"ready{i}").exists() for i in range(2)), 60)
        (tmp_path / "go").touch()
        outputs = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outputs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()

    # every one of the 30 tokens was taken exactly once between the two processes
    assert sum(o["fixed"] for o in outputs) == 30
    # 5 at the start plus 10/s over ~0.99 s of shared clock, and never more
    assert 13 <= sum(o["moving"] for o in outputs) <= 14
