"""End to end: the campaign pool serves organizations round-robin. Real worker processes send one
organization's large batch of campaign rows to the real loopback SMTP sink (the pool paced, so the send lasts);
a small campaign of another organization queued meanwhile is through while most of the large one still
waits, instead of queuing behind all of it. The rows are handed to the pool as the campaign walk hands them
(`create_batch` with `enqueue=True`)."""

from __future__ import annotations

import time

import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker_env(DELIVERY_CAMPAIGN_RATE=60),
]

LARGE = 900  # 15 s at 60 messages a second
SMALL = 30


def received(sink) -> list[str]:
    return [rcpt for m in list(sink.messages) for rcpt in m.rcpt_tos]


def test_a_small_campaign_is_not_queued_behind_another_organizations_large_one(smtp_sink, workers):
    from testsupport.world import pool_campaign_rows, sending_organization

    large_org = sending_organization("Large", "large.test", sender="news", postal_address="Large Inc.")
    small_org = sending_organization("Small", "small.test", sender="news", postal_address="Small Inc.")
    large = pool_campaign_rows(large_org, "large", LARGE)
    workers.wait_until(lambda: len(smtp_sink.messages) >= 30, timeout=120, interval=0.05)
    small = pool_campaign_rows(small_org, "small", SMALL)
    started = time.monotonic()
    workers.wait_until(lambda: small <= set(received(smtp_sink)), timeout=240, interval=0.1)
    small_took = time.monotonic() - started
    large_done = len(large & set(received(smtp_sink)))
    print(f"small campaign through in {small_took:.1f} s; the large one had {large_done}/{LARGE} by then")
    assert large_done < LARGE // 2  # first-in-first-out would have sent all of the large one first
    workers.wait_until(lambda: len(smtp_sink.messages) >= LARGE + SMALL, timeout=300, interval=0.5)
    time.sleep(1)
    got = received(smtp_sink)
    assert set(got) == large | small and len(got) == LARGE + SMALL  # everyone, nobody twice
