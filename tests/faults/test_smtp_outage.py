"""(c) The SMTP server refuses connections for 30 s mid-stream: the DLV-17 retries (1 s, 5 s, 30 s) carry
every message over the outage; nothing is lost and nothing sent twice."""

from __future__ import annotations

import time

import pytest

from tests.faults.conftest import SIZES
from testsupport.faults import assert_clean

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OUTAGE_SECONDS = 30.0


@pytest.mark.parametrize("size", SIZES)
def test_smtp_refusing_connections_for_30_seconds(size, make_flow, smtp_sink, supervised_workers):
    workers = supervised_workers
    flow = make_flow(size)
    flow.tx_interval = 0.5 if size[1] <= 100 else 0.15  # the stream spans the outage
    flow.start_automation()
    deadline = time.monotonic() + 120
    while len(smtp_sink.messages) < len(flow.expected) // 4 and time.monotonic() < deadline:
        flow.pump(0.2)
    before = len(smtp_sink.messages)
    smtp_sink.stop()  # the port is closed: connections are refused
    down_at = time.monotonic()
    flow.pump(OUTAGE_SECONDS)
    smtp_sink.start()
    print(f"\nSMTP down for {time.monotonic() - down_at:.1f} s after {before} messages")
    flow.run_to_end(workers, timeout=size[2])
    tally = flow.tally(f"SMTP refusing 30 s, {size[0]} contacts + {size[1]} transactional")
    assert_clean(tally)
    assert flow.finished()
