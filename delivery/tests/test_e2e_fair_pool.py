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
SMALL = 80


def received(sink) -> list[str]:
    return [rcpt for m in list(sink.messages) for rcpt in m.rcpt_tos]


def large_while_small(got: list[str], small: set[str]) -> int:
    """How many other rows were accepted between the small campaign's first and last acceptance: the fair
    pool lets its rows into the running jobs a part at a time, so only the large send's floor (3 of each part
    of 25) and the rows already on their connections go out beside it (first-in-first-out, or an equal split
    per job, would send at least as many of the large one's rows as of its own)."""
    at = [i for i, rcpt in enumerate(got) if rcpt in small]
    return sum(1 for rcpt in got[at[0] : at[-1] + 1] if rcpt not in small)


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
    beside = large_while_small(received(smtp_sink), small)
    print(
        f"small campaign through in {small_took:.1f} s; the large one had {large_done}/{LARGE} by then, "
        f"{beside} of them between the small one's first and last message"
    )
    assert large_done < LARGE // 2  # first-in-first-out would have sent all of the large one first
    assert beside <= SMALL // 2  # the small one was sent ahead of the large one, not beside it
    workers.wait_until(lambda: len(smtp_sink.messages) >= LARGE + SMALL, timeout=300, interval=0.5)
    time.sleep(1)
    got = received(smtp_sink)
    assert set(got) == large | small and len(got) == LARGE + SMALL  # everyone, nobody twice
