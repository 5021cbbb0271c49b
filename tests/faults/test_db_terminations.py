"""(d) PostgreSQL terminates the workers' backends mid-batch (`pg_terminate_backend`), five times. Only this
test's worker connections are touched: they are named through PGAPPNAME (`app_name` fixture)."""

from __future__ import annotations

import random

import pytest

from tests.faults.conftest import SIZES
from testsupport.faults import assert_clean, terminate_backends

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("size", SIZES)
def test_terminated_worker_backends_mid_batch(size, make_flow, smtp_sink, supervised_workers, app_name):
    workers = supervised_workers
    flow = make_flow(size)
    rng = random.Random(1304)
    flow.start_automation()
    terminated = []
    for _ in range(5):
        flow.pump(rng.uniform(0.5, 2.0))
        terminated.append(terminate_backends(app_name))
    flow.run_to_end(workers, timeout=size[2])
    tally = flow.tally(f"pg_terminate_backend x5 ({sum(terminated)} backends), {size[0]} + {size[1]}")
    print(f"backends terminated per round: {terminated}")
    assert sum(terminated) >= 5
    assert_clean(tally, interrupted_jobs=sum(terminated))
    assert flow.finished()
