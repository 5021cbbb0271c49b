"""CMP-34: recipients get the campaign at their own wall-clock time, correct across DST changes."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from campaigns.timezones import next_local_instant, zone_for

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(*args):
    return dt.datetime(*args, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("zone", "now", "expected"),
    [
        # Berlin springs forward on 2026-03-29: 09:00 is 08:00 UTC the day before and 07:00 UTC that day
        (BERLIN, utc(2026, 3, 28, 9, 0), utc(2026, 3, 29, 7, 0)),
        (BERLIN, utc(2026, 3, 27, 12, 0), utc(2026, 3, 28, 8, 0)),
        # New York springs forward on 2026-03-08 (EST −5 → EDT −4)
        (NEW_YORK, utc(2026, 3, 7, 15, 0), utc(2026, 3, 8, 13, 0)),
        (NEW_YORK, utc(2026, 3, 7, 13, 0), utc(2026, 3, 7, 14, 0)),
        # Berlin falls back on 2026-10-25
        (BERLIN, utc(2026, 10, 24, 8, 0), utc(2026, 10, 25, 8, 0)),
    ],
)
def test_next_local_nine_across_dst(zone, now, expected):
    got = next_local_instant(zone, 9, 0, now)
    assert got == expected
    assert got.astimezone(zone).hour == 9 and got.astimezone(zone).minute == 0


def test_strictly_after_now():
    now = utc(2026, 6, 1, 7, 0)  # exactly 09:00 in Berlin (CEST)
    assert next_local_instant(BERLIN, 9, 0, now) == utc(2026, 6, 2, 7, 0)


def test_zone_fallbacks():
    assert zone_for("Europe/Berlin", "UTC") == BERLIN
    assert zone_for("Not/AZone", "America/New_York") == NEW_YORK
    assert zone_for(None, "bogus") == ZoneInfo("UTC")
    assert zone_for("", "") == ZoneInfo("UTC")


def test_campaign_at_nine_recipient_time_across_a_dst_change(make_campaign, org, topic, make_contact):
    """Given a campaign scheduled for 09:00 recipient time the day before Berlin's spring-forward, then each
    zone's chunk is due at that zone's 09:00 — Berlin at 07:00 UTC (CEST), not 08:00 (yesterday's offset)."""
    from campaigns.lifecycle import campaign_transition
    from campaigns.orchestrator import start_campaign_send
    from campaigns.walker import resolve_campaign_page
    from delivery.models import EmailSend
    from owlat.models import DueTask, OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(timezone="America/New_York")
    berlin = make_contact(topic=topic, timezone="Europe/Berlin")
    ny = make_contact(topic=topic, timezone="America/New_York")
    fallback = make_contact(topic=topic, timezone="Mars/Olympus")  # → the organization's zone
    campaign = make_campaign()
    fire = utc(2027, 3, 27, 12, 0)  # Berlin springs forward on 2027-03-28; due tasks must be in the future
    assert campaign_transition(
        campaign_id=campaign.pk,
        to="scheduled",
        actor="u",
        at=fire - dt.timedelta(days=1),
        input={
            "scheduled_at": fire,
            "use_recipient_timezone": True,
            "scheduled_hour": 9,
            "scheduled_minute": 0,
        },
    ).ok
    assert campaign_transition(
        campaign_id=campaign.pk, to="sending", actor="system:scheduler_tick", at=fire
    ).ok
    assert start_campaign_send(campaign.pk, now=fire) == "send job opened"
    resolve_campaign_page(campaign.pk, "", now=fire)
    due = {}
    for task in DueTask.objects.filter(func="delivery.tasks.send_batch_task"):
        for send_id in task.args[1]:
            due[EmailSend.objects.get(pk=send_id).contact_id] = task.due_at
    assert due == {
        berlin.pk: utc(2027, 3, 28, 7, 0),
        ny.pk: utc(2027, 3, 27, 13, 0),  # 08:00 EDT at firing: today at 09:00
        fallback.pk: utc(2027, 3, 27, 13, 0),
    }


def test_wall_time_in_a_dst_gap_and_fold():
    """02:30 does not exist in Berlin on 2027-03-28 (02:00 → 03:00): taken at the pre-transition offset, 03:30
    CEST; on 2027-10-31 02:30 happens twice: the first one (CEST) is taken."""
    assert next_local_instant(BERLIN, 2, 30, utc(2027, 3, 27, 23, 0)) == utc(2027, 3, 28, 1, 30)
    assert next_local_instant(BERLIN, 2, 30, utc(2027, 10, 30, 23, 0)) == utc(2027, 10, 31, 0, 30)


def _schedule_local(campaign, *, at, hour, minute):
    from campaigns.lifecycle import campaign_transition

    assert campaign_transition(
        campaign_id=campaign.pk,
        to="scheduled",
        actor="u",
        at=at - dt.timedelta(hours=1),
        input={
            "scheduled_at": at,
            "use_recipient_timezone": True,
            "scheduled_hour": hour,
            "scheduled_minute": minute,
        },
    ).ok
    assert campaign_transition(campaign_id=campaign.pk, to="sending", actor="system:scheduler_tick", at=at).ok


def test_one_instant_per_zone_for_the_whole_walk(make_campaign, topic, make_contact, monkeypatch, settings):
    """Given a walk that started at 08:59:59 Berlin time and pages that run either side of 09:00, then every
    Berlin row carries the same not-before instant (today's 09:00), not one a day later for the late pages."""
    from campaigns import audience as audience_module
    from campaigns.models import CampaignSendJob
    from campaigns.orchestrator import start_campaign_send
    from campaigns.walker import resolve_campaign_page
    from delivery.models import EmailSend

    settings.CAMPAIGN_WALK_PAGES_PER_HOP = 1
    monkeypatch.setattr(audience_module, "PAGE_SIZE", 2)
    for _ in range(5):
        make_contact(topic=topic, timezone="Europe/Berlin")
    campaign = make_campaign()
    start = utc(2027, 6, 1, 6, 59, 59)
    _schedule_local(campaign, at=start, hour=9, minute=0)
    assert start_campaign_send(campaign.pk, now=start) == "send job opened"
    clock = start
    resolve_campaign_page(campaign.pk, "", now=clock)
    while (job := CampaignSendJob.objects.get(campaign=campaign)).phase == "resolving":
        clock += dt.timedelta(seconds=2)  # the next pages run after 09:00 Berlin
        resolve_campaign_page(campaign.pk, job.cursor, job.hop_token, now=clock)
    assert job.pages == 3
    instants = list(EmailSend.objects.filter(campaign_id=campaign.pk).values_list("not_before", flat=True))
    assert instants == [utc(2027, 6, 1, 7, 0)] * 5


@pytest.mark.parametrize("kind", ["campaign", "transactional"])
def test_nothing_hands_a_row_out_before_its_instant(kind, org, make_contact):
    """Given a queued row due at 10:00, then before 10:00 no job claims it (given or topped up), the orphan sweep
    does not re-drive it, and a job that ran early puts it back on the pool due at 10:00; from 10:00 on it is
    claimable, and orphaned only `orphan_after` after its instant."""
    import uuid

    from delivery.lifecycle import claim_orphans, claim_queued, claim_sends, lease_orphans
    from delivery.lifecycle.refs import orphan_after
    from delivery.models import EmailSend, TransactionalSend
    from delivery.worker import _defer_not_due
    from owlat.models import DueTask

    due_at = utc(2027, 6, 1, 10, 0)
    queued = due_at - dt.timedelta(hours=6)
    contact = make_contact()
    if kind == "campaign":
        row = EmailSend.objects.create(
            organization=org,
            campaign_id=uuid.uuid4(),
            contact=contact,
            contact_email=contact.email,
            queued_at=queued,
            not_before=due_at,
        )
    else:
        row = TransactionalSend.objects.create(
            organization=org, kind="transactional", email=contact.email, queued_at=queued, not_before=due_at
        )
    early = due_at - dt.timedelta(minutes=1)
    assert claim_sends(kind, [str(row.pk)], now=early)[1] == []
    assert claim_queued(kind, uuid.uuid4(), limit=10, now=early) == []
    assert claim_orphans(kind, now=early) == [] and lease_orphans(kind, now=early) == []
    after = orphan_after(kind)
    assert claim_orphans(kind, now=due_at + after - dt.timedelta(seconds=1)) == []
    assert _defer_not_due(kind, [str(row.pk)], [], early) == 1
    task = DueTask.objects.get(func="delivery.tasks.send_batch_task")
    assert task.due_at == due_at and task.args[1] == [str(row.pk)]
    assert claim_orphans(kind, now=due_at + after + dt.timedelta(seconds=1)) == [str(row.pk)]
    assert claim_sends(kind, [str(row.pk)], now=due_at)[1] == [str(row.pk)]
