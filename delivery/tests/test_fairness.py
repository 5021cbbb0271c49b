"""The campaign pool's fair share (delivery.fairness): a job of one organization's rows takes an equal share
for every other organization with claimable rows waiting and hands the rest of its own rows back."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delivery.fairness import fair_batch
from delivery.models import EmailSend


def _rows(make_campaign_send, n):
    return [str(make_campaign_send().pk) for _ in range(n)]


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
    assert take == theirs[:4] + mine[:4] and back == mine[4:]
    settings.DELIVERY_POOL_WEIGHTS = {str(other.pk): 3}
    take, back = fair_batch(mine, limit=8, now=timezone.now())
    assert take == theirs[:6] + mine[:2] and back == mine[2:]


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
