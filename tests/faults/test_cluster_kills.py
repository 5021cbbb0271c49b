"""(a) SIGKILL of the default and transactional clusters at random points while contacts run a three-step
automation and a transactional stream flows: five kills, each followed by a restart — odd kills take the whole
supervised process down (the test starts it again), even ones only the cluster under its supervisor (which
restarts it). A killed worker's tasks are handed out again at once and its send rows re-driven after the lease."""

from __future__ import annotations

import random

import pytest

from tests.faults.conftest import SIZES
from testsupport.faults import assert_clean, kill_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("size", SIZES)
def test_cluster_sigkills_lose_and_duplicate_nothing(size, make_flow, supervised_workers):
    workers = supervised_workers
    flow = make_flow(size)
    rng = random.Random(1301)
    flow.start_automation()
    for kill in range(5):
        flow.pump(rng.uniform(0.5, 2.5))
        if kill % 2 == 0:
            workers.kill("default", "transactional")
            workers.start("default", "transactional")
        else:
            kill_cluster(workers, "default")
            kill_cluster(workers, "transactional")
    flow.run_to_end(workers, timeout=size[2])
    tally = flow.tally(f"cluster SIGKILL x5, {size[0]} contacts + {size[1]} transactional")
    assert_clean(tally)
    assert flow.finished()
