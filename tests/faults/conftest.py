"""The fault suite (issue 13): real worker processes as `make run` starts them (each cluster under its
supervisor), PostgreSQL and the loopback SMTP sink. Every test prints expected, received, duplicates, lost and
outcome-unknown (D-07) counts and asserts zero duplicates and zero lost (lost = expected − received − unknown).
The fast variants are small; the full sizes are `slow` (OWLAT_SLOW_TESTS=1, set by .ci/run)."""

from __future__ import annotations

import uuid

import pytest

from testsupport.faults import FAULT_ENV, MailFlow

pytestmark = [pytest.mark.e2e]

#: (contacts through the automation, transactional sends, seconds to finish)
FAST = (100, 40, 240)
FULL = (1000, 300, 1200)
SIZES = [pytest.param(FAST, id="fast"), pytest.param(FULL, id="full", marks=pytest.mark.slow)]


@pytest.fixture
def app_name() -> str:
    """application_name of this test's worker connections: the only backends a test may terminate."""
    return f"owlat-faults-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def proc_tmp(tmp_path):
    d = tmp_path / "proc-tmp"
    d.mkdir()
    return d


@pytest.fixture
def worker_env(app_name, proc_tmp, settings):
    # what this process reads for /api/v1/health
    settings.CLUSTER_WATCHDOG_INTERVAL_SECONDS = float(FAULT_ENV["CLUSTER_WATCHDOG_INTERVAL_SECONDS"])
    settings.HEALTH_QUEUE_AGE_DEGRADED_SECONDS = 3.0
    return {**FAULT_ENV, "TMPDIR": str(proc_tmp), "PGAPPNAME": app_name}


@pytest.fixture
def make_flow(smtp_sink):
    def make(size: tuple[int, int, int]) -> MailFlow:
        contacts, transactional, _ = size
        return MailFlow(smtp_sink, contacts=contacts, transactional=transactional)

    return make
