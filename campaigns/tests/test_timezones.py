"""CMP-34: recipients get the campaign at their own wall-clock time, correct across DST changes."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from campaigns.walker import next_local_instant, zone_for

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
