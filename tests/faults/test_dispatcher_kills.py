"""(e) The due-task dispatcher (`run_due_tasks`: delays, retries, recovery sweeps) SIGKILLed at random points
and restarted, three times while every run waits in its delay step: the due tasks it had leased are handed
over after the lease, none twice."""

from __future__ import annotations

import random

import pytest

from tests.faults.conftest import SIZES
from testsupport.faults import assert_clean

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("size", SIZES)
def test_dispatcher_killed_and_restarted(size, make_flow, smtp_sink, supervised_workers):
    workers = supervised_workers
    flow = make_flow(size)
    rng = random.Random(1305)
    flow.start_automation()
    for _ in range(3):
        flow.pump(rng.uniform(1.0, 3.0))
        workers.kill("dispatcher")
        flow.pump(rng.uniform(0.5, 2.0))  # no dispatcher for a moment
        workers.start("dispatcher")
    flow.run_to_end(workers, timeout=size[2])
    tally = flow.tally(f"dispatcher SIGKILL x3, {size[0]} contacts + {size[1]} transactional")
    assert_clean(tally)
    assert flow.finished()
