"""The campaign pool's fair share (delivery.fairness): the share rule (`fair_shares`, a pure function) and a job
of one organization's rows taking the other organizations' waiting rows by it, handing the rest of its own back."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delivery.fairness import fair_batch, fair_shares
from delivery.models import EmailSend


def test_alone_an_organization_gets_the_whole_round():
    assert fair_shares(100, "a", {"a": 100}, floor=0.1) == {"a": 100}
    assert fair_shares(100, "a", {"a": 30}, floor=0.1) == {"a": 30}


def test_a_newcomer_gets_the_round_above_the_own_floor():
    """The small backlog goes out at the next round, nearly at the pool's full speed: the job's organization
    keeps its floor (10 of 100 rows) and the rest of its rows go back to the pool."""
    assert fair_shares(100, "big", {"big": 100, "small": 200}, floor=0.1) == {"big": 10, "small": 90}
    assert fair_shares(100, "big", {"big": 100, "small": 30}, floor=0.1) == {"big": 70, "small": 30}


def test_the_fewest_rows_waiting_go_first_and_every_organization_keeps_its_floor():
    waiting = {"own": 100, "large": 500, "small": 40, "medium": 120}
    share = fair_shares(100, "own", waiting, floor=0.1)
    assert share == {"own": 10, "large": 10, "small": 40, "medium": 40}
    assert sum(share.values()) == 100


def test_the_floor_is_never_more_than_the_round_and_never_more_than_what_waits():
    waiting = {f"o{i}": 500 for i in range(20)}
    share = fair_shares(100, "o0", waiting, floor=0.1)
    assert sum(share.values()) == 100 and share["o0"] == 10  # the own floor first; nobody over the round
    assert fair_shares(100, "a", {"a": 100, "b": 3}, floor=0.1) == {"a": 97, "b": 3}


def test_a_half_floor_splits_two_organizations_equally():
    assert fair_shares(100, "a", {"a": 100, "b": 500}, floor=0.5) == {"a": 50, "b": 50}
    assert fair_shares(100, "a", {"a": 100, "b": 500}, floor=0.0) == {"a": 0, "b": 100}


def test_weights_scale_the_floor_and_the_order():
    weights = {"a": 1.0, "b": 3.0, "c": 1.0}
    share = fair_shares(100, "a", {"a": 100, "b": 240, "c": 100}, floor=0.1, weight_of=weights.__getitem__)
    # floors 10 / 30 / 10, then b first (240 / 3 = 80 per weight < c's 100): b takes the 50 left
    assert share == {"a": 10, "b": 80, "c": 10}


def _rows(make_campaign_send, n):
    return [str(make_campaign_send().pk) for _ in range(n)]


def mine_org(ids):
    return EmailSend.objects.get(pk=ids[0]).organization_id


@pytest.mark.django_db
def test_a_job_alone_in_the_pool_keeps_all_its_rows(make_campaign_send):
    ids = _rows(make_campaign_send, 6)
    assert fair_batch(ids, limit=4, now=timezone.now()) == (ids, [])


@pytest.mark.django_db
def test_a_job_shares_its_capacity_with_another_organization_waiting(make_campaign_send, settings):
    from testsupport.world import sending_organization

    mine = _rows(make_campaign_send, 8)
    theirs = _rows(make_campaign_send, 6)
    other = sending_organization("Other", "other.test", postal_address="Other Inc.")
    EmailSend.objects.filter(pk__in=theirs).update(organization_id=other.pk)
    take, back = fair_batch(mine, limit=8, now=timezone.now())
    assert take == theirs + mine[:2] and back == mine[2:]  # the newcomer's rows, the own floor and the rest
    settings.DELIVERY_POOL_FLOOR = 0.5  # an equal split
    take, back = fair_batch(mine, limit=8, now=timezone.now())
    assert take == theirs[:4] + mine[:4] and back == mine[4:]
    settings.DELIVERY_POOL_WEIGHTS = {str(mine_org(mine)): 0.25}  # the own floor: ceil(0.5 × 8 × 0.25) = 1
    take, back = fair_batch(mine, limit=8, now=timezone.now())
    assert take == theirs + mine[:2] and back == mine[2:]


@pytest.mark.django_db
def test_a_job_sends_the_other_organizations_share_first(make_campaign_send):
    """The rows a job takes for another organization waiting go out before its own: a small campaign behind a
    large one is through after half a job instead of at the job's end."""
    import uuid

    from delivery.worker import PoolJob
    from testsupport.world import sending_organization

    mine = _rows(make_campaign_send, 8)
    theirs = _rows(make_campaign_send, 6)
    other = sending_organization("Other", "other.test", postal_address="Other Inc.")
    EmailSend.objects.filter(pk__in=theirs).update(organization_id=other.pk)
    job = PoolJob("campaign", list(reversed(mine)), token=uuid.uuid4())
    won = job.claim()
    assert won == theirs + list(reversed(mine))
    assert [str(row.pk) for row in job.load(won).rows] == won


def _newcomer_during_a_job(make_campaign_send, mine_n, theirs_n):
    """Runs a job of `mine_n` rows; `theirs_n` rows of another organization are handed to the pool while its
    second row is on its way. Returns (the job's summary, the recipients in wire order, mine, theirs)."""
    import itertools
    import uuid

    from delivery.worker import dispatch_batch
    from testsupport.world import sending_organization

    mine = _rows(make_campaign_send, mine_n)
    theirs = _rows(make_campaign_send, theirs_n)
    other = sending_organization("Other", "other.test", postal_address="Other Inc.")
    # not waiting yet: held by a claim of their own until the job below is under way
    EmailSend.objects.filter(pk__in=theirs).update(
        organization_id=other.pk, claimed_at=timezone.now(), claim_token=uuid.uuid4()
    )
    paced = itertools.count(1)

    def pacer():
        if next(paced) == 2:  # the second own row: the newcomer is handed to the pool
            EmailSend.objects.filter(pk__in=theirs).update(claimed_at=None, claim_token=None)

    ticks = itertools.count()
    summary = dispatch_batch("campaign", mine, pacer=pacer, clock=lambda: next(ticks) * 0.1, connections=1)
    emails = dict(EmailSend.objects.filter(pk__in=mine + theirs).values_list("pk", "contact_email"))
    return summary, {emails[uuid.UUID(pk)] for pk in theirs}, mine


@pytest.mark.django_db
def test_a_running_job_lets_a_newcomer_in_before_its_own_rows_still_to_go(
    make_campaign_send, smtp_sink, settings
):
    """A campaign handed to the pool while a job of another organization runs does not wait for that job's
    end: at the job's next look (`FAIR_CHECK_SECONDS`) its rows are claimed and sent before the job's own rows
    still to go, and as many own rows go back to the pool as a new job."""
    from testsupport import queued_tasks

    settings.DELIVERY_CAMPAIGN_RATE = 0
    summary, newcomer, mine = _newcomer_during_a_job(make_campaign_send, 10, 4)
    assert summary.sent == 10
    smtp_sink.wait_for(10)
    order = [rcpt for m in smtp_sink.messages for rcpt in m.rcpt_tos]
    assert set(order[2:6]) == newcomer  # after the two own rows already on their way, before the others
    back = [pk for pk in mine if EmailSend.objects.get(pk=pk).status == "queued"]
    assert len(back) == 4 and not EmailSend.objects.filter(pk__in=back, claimed_at__isnull=False).exists()
    jobs = [t for t in queued_tasks() if t.func.endswith("send_batch_task")]
    assert [sorted(t.args[1]) for t in jobs] == [sorted(back)]  # handed back to the pool as a new job


@pytest.mark.django_db
def test_a_running_job_keeps_its_floor_between_the_parts_it_lets_in(make_campaign_send, smtp_sink, settings):
    """A newcomer with more rows waiting than a part (`LET_IN_ROWS`) is let in a part at a time, and the
    job's own floor (`DELIVERY_POOL_FLOOR` of each part) goes out between the parts: nobody starves."""
    from itertools import groupby

    settings.DELIVERY_CAMPAIGN_RATE = 0
    settings.DELIVERY_POOL_FLOOR = 0.1
    summary, newcomer, mine = _newcomer_during_a_job(make_campaign_send, 30, 60)
    smtp_sink.wait_for(summary.sent)
    order = [rcpt for m in smtp_sink.messages for rcpt in m.rcpt_tos]
    runs = [(theirs, len(list(group))) for theirs, group in groupby(order, key=lambda r: r in newcomer)]
    # the own rows under way, a part of 22 newcomer rows and the own floor of 3 (ceil(0.1 × 25)), then the
    # last own rows shared again (3 left: floor 1, 2 newcomer rows)
    assert runs == [(False, 2), (True, 22), (False, 3), (True, 2), (False, 1)]
    # the 24 own rows not sent went back to the pool, unclaimed
    assert EmailSend.objects.filter(pk__in=mine, status="queued", claimed_at__isnull=True).count() == 24
