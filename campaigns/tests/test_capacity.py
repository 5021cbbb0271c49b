"""CMP-21 #9 `exceeds_sending_capacity`: the warming-capacity planner in the one pre-flight, its multi-day
offer, today's usage, the start-day anchor, the fire-time skip (CMP-24), the wrappers, the admin readiness panel
and the readiness endpoint."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.capacity import MAX_PLAN_DAYS, day_start, plan_for
from campaigns.preflight import CHECK_ORDER, validate_ready_to_send
from owlat.permissions import Authority

SYSTEM = Authority.system("test")


@pytest.fixture
def five_members(org, topic, make_contact):
    """Five eligible members and excluded ones the capacity count must not include."""
    eligible = [make_contact(topic=topic) for _ in range(5)]
    make_contact(topic=topic, unsubscribed_at=timezone.now())
    make_contact(topic=topic, pending=True)
    make_contact(None, topic=topic)
    return eligible


def _used_today(org, count, *, at=None):
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(
        daily_send_count=count, daily_send_count_reset_at=day_start(at or timezone.now())
    )


def test_capacity_is_the_last_check():
    assert CHECK_ORDER[-1] == "exceeds_sending_capacity" and len(CHECK_ORDER) == 9


def test_not_planned_never_blocks(make_campaign, five_members, settings):
    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 0
    assert validate_ready_to_send(make_campaign()).ready


def test_fits_counting_only_eligible_recipients(make_campaign, five_members, settings):
    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 5
    assert validate_ready_to_send(make_campaign()).ready


def test_too_large_is_refused_with_the_multi_day_plan(make_campaign, five_members, settings):
    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 2
    r = validate_ready_to_send(make_campaign())
    assert not r.ready
    assert (r.reason, r.message) == (
        "exceeds_sending_capacity",
        "This campaign is larger than your sending capacity allows in one go. At your current warm-up capacity "
        "it takes about 3 days to reach everyone, so send it over 3 days instead.",
    )


def test_what_was_enqueued_today_is_used_up(make_campaign, five_members, org, settings):
    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 8
    campaign = make_campaign()
    _used_today(org, 4)
    r = validate_ready_to_send(campaign)
    assert r.reason == "exceeds_sending_capacity" and "about 2 days" in r.message
    # yesterday's count is not today's
    _used_today(org, 4, at=timezone.now() - dt.timedelta(days=1))
    assert validate_ready_to_send(campaign).ready


def test_the_projection_starts_on_the_send_day(make_campaign, five_members, org, settings):
    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 5
    campaign = make_campaign()
    _used_today(org, 5)
    now = timezone.now()
    assert validate_ready_to_send(campaign, now=now).reason == "exceeds_sending_capacity"
    tomorrow = day_start(now) + dt.timedelta(days=1, hours=9)
    assert validate_ready_to_send(campaign, scheduled_at=tomorrow, now=now).ready


def test_earlier_checks_win(make_campaign, five_members, settings):
    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 1
    campaign = make_campaign(from_email="promo@acme.test")
    assert validate_ready_to_send(campaign).reason == "sender_not_allowed"
    past = timezone.now() - dt.timedelta(minutes=1)
    assert validate_ready_to_send(make_campaign(), scheduled_at=past).reason == "scheduled_in_past"


def test_plan_truncates_and_marks_a_lower_bound():
    plan = plan_for(10_000, first_day=10, daily=10)
    assert (plan.fits, plan.truncated, plan.days) == (False, True, MAX_PLAN_DAYS)
    assert plan.message().endswith(
        f"it would take more than {MAX_PLAN_DAYS} days to reach everyone — send it in stages, or reduce the audience."
    )
    floor = plan_for(25, first_day=0, daily=10, under_counted=True)
    assert (floor.fits, floor.days) == (False, 4)
    assert (
        "it takes at least 4 days to reach everyone, so send it over several days instead." in floor.message()
    )
    one = plan_for(3, first_day=0, daily=10)
    assert one.days == 2 and "about 2 days" in one.message()
    assert plan_for(10, first_day=10, daily=10).fits


def test_wrappers_refuse_and_nothing_moves(make_campaign, five_members, org, settings):
    from campaigns.services import campaign_schedule, campaign_send_now

    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 2
    campaign = make_campaign()
    common = {"campaign_id": campaign.pk, "organization_id": org.pk, "actor": "u", "authority": SYSTEM}
    out = campaign_send_now(**common)
    assert (out.ok, out.reason) == (False, "exceeds_sending_capacity") and "3 days" in out.message
    later = timezone.now() + dt.timedelta(days=2)
    out = campaign_schedule(**common, scheduled_at=later)
    assert (out.ok, out.reason) == (False, "exceeds_sending_capacity")
    campaign.refresh_from_db()
    assert campaign.status == "draft"


def test_the_orchestrator_skips_the_capacity_check(make_campaign, five_members, org, settings):
    """CMP-24: a campaign that passed at schedule time is not stranded when capacity shrinks before it fires."""
    from campaigns.lifecycle import campaign_transition
    from campaigns.orchestrator import start_campaign_send
    from delivery.models import EmailSend
    from testsupport.queue import drain_queue

    campaign = make_campaign()
    when = timezone.now() + dt.timedelta(hours=1)
    assert campaign_transition(
        campaign_id=campaign.pk, to="scheduled", actor="u", input={"scheduled_at": when}
    ).ok
    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 1
    assert validate_ready_to_send(campaign, check_capacity=False).ready
    assert start_campaign_send(campaign.pk, now=when + dt.timedelta(seconds=1)).startswith("moved to sending")
    drain_queue(max_tasks=500)
    assert EmailSend.objects.filter(campaign_id=campaign.pk).count() == 5


def test_the_walker_counts_sends_per_utc_day(make_campaign, five_members, org):
    from campaigns.services import campaign_send_now
    from owlat.models import OrganizationSettings
    from testsupport.queue import drain_queue

    _used_today(org, 40, at=timezone.now() - dt.timedelta(days=1))  # yesterday's: replaced, not added to
    campaign = make_campaign()
    assert campaign_send_now(campaign_id=campaign.pk, organization_id=org.pk, actor="u", authority=SYSTEM).ok
    drain_queue(max_tasks=500)
    row = OrganizationSettings.objects.get(organization=org)
    assert (row.daily_send_count, row.daily_send_count_reset_at) == (5, day_start(timezone.now()))


def test_admin_readiness_panel_shows_the_refusal(
    client, django_user_model, org, make_campaign, five_members, settings
):
    from campaigns.tests.test_admin import login

    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 2
    login(client, django_user_model, org)
    campaign = make_campaign()
    page = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    assert "exceeds_sending_capacity" in body and "send it over 3 days instead" in body


def test_readiness_endpoint_reports_without_sending(client, org, make_campaign, five_members, settings):
    from testsupport.api import make_key

    settings.CAMPAIGN_DAILY_SEND_CAPACITY = 2
    campaign = make_campaign()
    _, raw = make_key(org, ["campaigns:read"])
    r = client.get(f"/api/v1/campaigns/{campaign.pk}/preflight", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert r.status_code == 200, r.content
    data = r.json()["data"]
    assert (data["ready"], data["reason"]) == (False, "exceeds_sending_capacity")
    assert "send it over 3 days instead" in data["message"]
    campaign.refresh_from_db()
    assert campaign.status == "draft"
