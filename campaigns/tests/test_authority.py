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


# --- create, edit, delete, duplicate, A/B and review (CMP-11, CMP-12, CMP-18) ------------------------------------

CONFIG = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": "manual"}


def _manage_actions(campaign, authority):
    """Each `campaigns:manage` write, called with `authority`; returns (verb, ok) pairs."""
    from campaigns import abtest, services

    results = []

    def attempt(verb, call):
        try:
            out = call()
        except services.CampaignError as exc:
            assert exc.category == "forbidden", exc.message
            results.append((verb, False, exc.message))
            return
        ok = getattr(out, "ok", True)
        results.append((verb, ok, getattr(out, "message", "")))

    org = campaign.organization_id
    attempt(
        "create",
        lambda: services.campaign_create(
            organization_id=org, actor="u", fields={"name": "New"}, authority=authority
        ),
    )
    attempt(
        "edit",
        lambda: services.campaign_update(
            campaign=campaign, actor="u", changes={"name": "Renamed"}, authority=authority
        ),
    )
    attempt(
        "duplicate", lambda: services.campaign_duplicate(campaign=campaign, actor="u", authority=authority)
    )
    attempt(
        "ab_enable",
        lambda: abtest.ab_enable(campaign=campaign, config=CONFIG, actor="u", authority=authority),
    )
    attempt("ab_disable", lambda: abtest.ab_disable(campaign=campaign, actor="u", authority=authority))
    attempt("delete", lambda: services.campaign_delete(campaign=campaign, actor="u", authority=authority))
    return results


@pytest.mark.parametrize("role", ["owner", "admin", "editor"])
def test_every_member_role_may_manage_campaigns(make_campaign, role):
    """DOM-02: `campaigns:manage` is owner, admin and editor."""
    from campaigns.models import Campaign

    campaign = make_campaign()
    results = _manage_actions(campaign, Authority.member(role))
    assert all(ok for _, ok, _ in results), results
    assert not Campaign.objects.filter(pk=campaign.pk).exists()  # deleted last
    assert Campaign.objects.filter(name="New").exists()
    assert Campaign.objects.filter(name__startswith="Copy of ").exists()


@pytest.mark.parametrize("role", [None, "", "viewer"])
def test_a_member_without_campaigns_manage_changes_nothing(make_campaign, role):
    from campaigns.models import Campaign

    campaign = make_campaign()
    name, before = campaign.name, Campaign.objects.count()
    results = _manage_actions(campaign, Authority.member(role))
    assert [verb for verb, ok, _ in results if ok] == []
    messages = {verb: message for verb, _, message in results}
    assert messages["create"] == "You are not allowed to create campaigns"
    assert messages["edit"] == "You are not allowed to edit campaigns"
    assert messages["delete"] == "You are not allowed to delete campaigns"
    assert messages["duplicate"] == "You are not allowed to duplicate campaigns"
    assert messages["ab_enable"] == messages["ab_disable"] == "You are not allowed to change A/B tests"
    campaign.refresh_from_db()
    assert (campaign.name, campaign.is_ab_test, Campaign.objects.count()) == (name, False, before)


@pytest.mark.parametrize("authority", GRANTS[:4], ids=lambda a: a.granted_by)
def test_named_grants_may_manage_campaigns(make_campaign, authority):
    campaign = make_campaign()
    results = _manage_actions(campaign, authority)
    assert all(ok for _, ok, _ in results), results


@pytest.mark.parametrize(
    "call",
    [
        lambda c: __import__("campaigns.services").services.campaign_create(
            organization_id=c.organization_id, actor="u", fields={"name": "x"}
        ),
        lambda c: __import__("campaigns.services").services.campaign_update(
            campaign=c, actor="u", changes={}
        ),
        lambda c: __import__("campaigns.services").services.campaign_delete(campaign=c, actor="u"),
        lambda c: __import__("campaigns.services").services.campaign_duplicate(campaign=c, actor="u"),
        lambda c: __import__("campaigns.abtest").abtest.ab_enable(campaign=c, config=CONFIG, actor="u"),
        lambda c: __import__("campaigns.abtest").abtest.ab_disable(campaign=c, actor="u"),
        lambda c: __import__("campaigns.abtest").abtest.ab_declare_winner(
            campaign_id=c.pk, winner="A", actor="u"
        ),
        lambda c: __import__("campaigns.review").review.review_approve(campaign_id=c.pk, actor="u"),
        lambda c: __import__("campaigns.review").review.review_reject(
            campaign_id=c.pk, actor="u", reason="r"
        ),
    ],
    ids=["create", "update", "delete", "duplicate", "ab_enable", "ab_disable", "winner", "approve", "reject"],
)
def test_every_write_requires_an_authority(make_campaign, call):
    campaign = make_campaign()
    with pytest.raises(TypeError):
        call(campaign)


def _testing_ab_campaign(make_campaign, make_contact, topic):
    from campaigns.abtest import ab_enable
    from campaigns.lifecycle import campaign_transition
    from campaigns.orchestrator import start_campaign_send

    make_contact(topic=topic)
    campaign = make_campaign()
    assert ab_enable(campaign=campaign, config=CONFIG, actor="u", authority=Authority.system("test")).ok
    assert campaign_transition(campaign_id=campaign.pk, to="sending", actor="system:test").ok
    assert start_campaign_send(campaign.pk) == "send job opened"  # the A/B window starts with the walk
    campaign.refresh_from_db()
    assert campaign.ab_test_status == "testing"
    return campaign


@pytest.mark.parametrize(
    ("authority", "allowed"),
    [
        (Authority.member("owner"), True),
        (Authority.member("admin"), True),
        (Authority.member("editor"), True),
        (Authority.member(None), False),
        (Authority.member("viewer"), False),
        (Authority.api_key("campaigns:send"), True),
        (Authority.operator(), True),
    ],
    ids=["owner", "admin", "editor", "no role", "viewer", "api key", "operator"],
)
def test_declare_winner_per_role(make_campaign, make_contact, topic, authority, allowed):
    """CMP-18: `campaigns:manage`; a refusal is CMP-18's message and leaves the test running."""
    from campaigns.abtest import ab_declare_winner

    campaign = _testing_ab_campaign(make_campaign, make_contact, topic)
    out = ab_declare_winner(
        campaign_id=campaign.pk,
        winner="B",
        actor="u",
        authority=authority,
        organization_id=campaign.organization_id,
    )
    campaign.refresh_from_db()
    if allowed:
        assert out.ok, out
        assert (campaign.ab_test_status, campaign.ab_winner) == ("winner_selected", "B")
    else:
        assert (out.ok, out.reason, out.message) == (
            False,
            "forbidden",
            "Only owners and admins can declare A/B test winners",
        )
        assert (campaign.ab_test_status, campaign.ab_winner) == ("testing", None)


def _held(make_campaign):
    from campaigns.lifecycle import campaign_transition

    campaign = make_campaign()
    assert campaign_transition(campaign_id=campaign.pk, to="sending", actor="system:test").ok
    assert campaign_transition(campaign_id=campaign.pk, to="pending_review", actor="system:content_scan").ok
    return campaign


@pytest.mark.parametrize(
    "authority",
    [
        Authority.member("owner"),
        Authority.member("admin"),
        Authority.member("editor"),
        Authority.member(None),
        Authority.api_key("campaigns:send"),
    ],
    ids=["owner", "admin", "editor", "no role", "api key"],
)
def test_only_platform_staff_review(make_campaign, authority):
    """CMP-12 / DOM-02: organization members (any role) and API keys cannot approve or reject."""
    from campaigns.review import review_approve, review_reject

    campaign = _held(make_campaign)
    for out in (
        review_approve(campaign_id=campaign.pk, actor="u", authority=authority),
        review_reject(campaign_id=campaign.pk, actor="u", reason="no", authority=authority),
    ):
        assert (out.ok, out.reason, out.message) == (
            False,
            "forbidden",
            "Only platform staff can review campaigns",
        )
    campaign.refresh_from_db()
    assert (campaign.status, campaign.approved_content_fingerprint) == ("pending_review", None)


@pytest.mark.parametrize(
    "authority", [Authority.platform_staff(), Authority.operator(), Authority.system("test")], ids=str
)
def test_platform_staff_operators_and_the_system_review(make_campaign, authority):
    from campaigns.review import review_approve, review_reject

    approved, rejected = _held(make_campaign), _held(make_campaign)
    assert review_approve(campaign_id=approved.pk, actor="staff", authority=authority).ok
    assert review_reject(campaign_id=rejected.pk, actor="staff", reason="Spammy", authority=authority).ok
    approved.refresh_from_db()
    rejected.refresh_from_db()
    assert (approved.status, rejected.status) == ("sending", "draft")
    assert rejected.content_block_reason == "Rejected in review: Spammy"
