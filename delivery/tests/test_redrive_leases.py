"""The orphan sweep's lease (D-07 recovery, issue 12 item 4): while a queue is stuck nothing claims the rows the
sweep handed to the pool, so without a lease every sweep (every QUEUE_SWEEP_SECONDS, and the minute schedule)
added another job for the same rows. A re-driven row records when (`redriven_at`) and is handed out again only
after `redrive_lease(kind)`; the job's claim stays the compare-and-set that makes a duplicate harmless."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest
from django.utils import timezone

from delivery.lifecycle import claim_orphans, lease_orphans, orphan_after, redrive_lease
from delivery.models import EmailSend, TransactionalSend
from delivery.reaper import reap_stuck_sends
from testsupport import drain_queue, queued_tasks, race

SEND_TASK = "delivery.tasks.send_batch_task"


def handed_out() -> Counter:
    """How many queued pool jobs carry each send id."""
    return Counter(pk for t in queued_tasks() if t.func == SEND_TASK for pk in t.args[1])


def _orphans(make_tx_send, make_campaign_send, *, tx: int = 3):
    now = timezone.now()
    rows = [make_tx_send() for _ in range(tx)]
    TransactionalSend.objects.filter(pk__in=[r.pk for r in rows]).update(
        queued_at=now - orphan_after("transactional") - dt.timedelta(seconds=1)
    )
    campaign = make_campaign_send()
    EmailSend.objects.filter(pk=campaign.pk).update(
        queued_at=now - orphan_after("campaign") - dt.timedelta(seconds=1)
    )
    return [str(r.pk) for r in rows], str(campaign.pk)


@pytest.mark.django_db
def test_a_stuck_queue_gets_each_orphan_once_per_lease(make_tx_send, make_campaign_send, settings, smtp_sink):
    tx_ids, campaign_id = _orphans(make_tx_send, make_campaign_send)
    everything = [*tx_ids, campaign_id]
    assert reap_stuck_sends(apply=False).counts()["orphans"] == 4  # a dry run leases nothing
    t0 = timezone.now()
    # three sweeps while nothing consumes the queues: one job per orphan
    for i in range(3):
        reap_stuck_sends(apply=True, now=t0 + dt.timedelta(seconds=i * settings.QUEUE_SWEEP_SECONDS))
    assert handed_out() == Counter(everything)
    assert set(TransactionalSend.objects.values_list("redriven_at", flat=True)) == {t0}
    # the transactional lease runs out first: those rows once more, the campaign row not yet
    tx_lease, campaign_lease = redrive_lease("transactional"), redrive_lease("campaign")
    assert tx_lease == dt.timedelta(seconds=settings.SEND_REDRIVE_LEASE_SECONDS) < campaign_lease
    after_tx = t0 + tx_lease + dt.timedelta(seconds=1)
    for i in range(3):
        reap_stuck_sends(apply=True, now=after_tx + dt.timedelta(seconds=i * settings.QUEUE_SWEEP_SECONDS))
    assert handed_out() == Counter({**dict.fromkeys(tx_ids, 2), campaign_id: 1})
    reap_stuck_sends(apply=True, now=t0 + campaign_lease + dt.timedelta(seconds=1))
    assert handed_out()[campaign_id] == 2
    # the duplicates are harmless: the jobs run, each row is sent once
    drain_queue()
    assert set(TransactionalSend.objects.values_list("status", flat=True)) == {"sent"}
    assert EmailSend.objects.get(pk=campaign_id).status == "sent"
    received = sorted(rcpt for m in smtp_sink.messages for rcpt in m.rcpt_tos)
    sent_to = [
        *TransactionalSend.objects.values_list("email", flat=True),
        EmailSend.objects.get().contact_email,
    ]
    assert received == sorted(sent_to)
    assert reap_stuck_sends(apply=True, now=t0 + 2 * campaign_lease).counts()["orphans"] == 0


@pytest.mark.django_db
def test_the_dispatchers_sweeps_in_a_row_hand_an_orphan_out_once(make_tx_send, make_campaign_send):
    from owlat.jobs import run_sweeps

    tx_ids, campaign_id = _orphans(make_tx_send, make_campaign_send, tx=2)
    for _ in range(3):
        assert "failed" not in run_sweeps().values()
    assert handed_out() == Counter([*tx_ids, campaign_id])
    assert claim_orphans("transactional") == []  # leased: not an orphan for the report either


@pytest.mark.django_db(transaction=True)
def test_two_hosts_sweeping_at_once_lease_each_orphan_once(make_tx_send, make_campaign_send):
    tx_ids, _ = _orphans(make_tx_send, make_campaign_send, tx=20)
    leased = race(lambda _: lease_orphans("transactional"), threads=2)
    assert sorted(pk for ids in leased for pk in ids) == sorted(tx_ids)
