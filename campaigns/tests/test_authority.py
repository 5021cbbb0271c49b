"""Issue 13 item 10: every CMP-11 action takes a required `Authority`; nothing is allowed by leaving it out."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from campaigns.services import campaign_cancel, campaign_schedule, campaign_send_now, campaign_unschedule
from owlat.permissions import Authority

GRANTS = [
    Authority.api_key("campaigns:send"),
    Authority.platform_staff(),
    Authority.operator(),
    Authority.system("test"),
    Authority.member("owner"),
    Authority.member("admin"),
    Authority.member("editor"),
]


def _later() -> dt.datetime:
    return timezone.now() + dt.timedelta(days=1)


@pytest.mark.parametrize(
    ("action", "extra"),
    [
        (campaign_send_now, {}),
        (campaign_schedule, {"scheduled_at": None}),
        (campaign_unschedule, {}),
        (campaign_cancel, {}),
    ],
)
def test_omitting_the_authority_is_a_type_error(make_campaign, action, extra):
    campaign = make_campaign()
    if "scheduled_at" in extra:
        extra = {"scheduled_at": _later()}
    with pytest.raises(TypeError):
        action(campaign_id=campaign.pk, organization_id=campaign.organization_id, actor="u", **extra)


@pytest.mark.parametrize("wrong", [None, "owner", {"role": "owner"}])
def test_anything_but_an_authority_is_a_type_error(make_campaign, wrong):
    campaign = make_campaign()
    with pytest.raises(TypeError):
        campaign_send_now(
            campaign_id=campaign.pk, organization_id=campaign.organization_id, actor="u", authority=wrong
        )


@pytest.mark.parametrize("role", [None, "", "viewer"])
def test_a_member_without_the_role_is_refused_and_nothing_changes(make_campaign, role):
    campaign = make_campaign()
    common = {"campaign_id": campaign.pk, "organization_id": campaign.organization_id, "actor": "u"}
    member = Authority.member(role)
    cases = [
        (campaign_send_now(**common, authority=member), "send"),
        (campaign_schedule(**common, authority=member, scheduled_at=_later()), "schedule"),
        (campaign_unschedule(**common, authority=member), "unschedule"),
        (campaign_cancel(**common, authority=member), "cancel"),
    ]
    for outcome, verb in cases:
        assert not outcome.ok
        assert (outcome.reason, outcome.message) == ("forbidden", f"You are not allowed to {verb} campaigns")
    campaign.refresh_from_db()
    assert campaign.status == "draft"


@pytest.mark.parametrize("authority", GRANTS, ids=lambda a: a.granted_by or f"member {a.role}")
def test_each_grant_is_allowed(make_campaign, authority):
    campaign = make_campaign()
    common = {"campaign_id": campaign.pk, "organization_id": campaign.organization_id, "actor": "u"}
    assert campaign_schedule(**common, authority=authority, scheduled_at=_later()).ok
    assert campaign_unschedule(**common, authority=authority).ok
    assert campaign_schedule(**common, authority=authority, scheduled_at=_later()).ok
    assert campaign_cancel(**common, authority=authority).ok
    other = make_campaign()
    out = campaign_send_now(
        campaign_id=other.pk, organization_id=other.organization_id, actor="u", authority=authority
    )
    assert out.ok, out
