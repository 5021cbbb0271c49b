"""CMP-21 pre-flight: each reason in order, shared by the wrappers and re-run at fire time (CMP-24)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from campaigns.preflight import CHECK_ORDER, validate_ready_to_send
from owlat.permissions import Authority

SYSTEM = Authority.system("test")


def test_a_complete_campaign_is_ready(make_campaign):
    result = validate_ready_to_send(make_campaign())
    assert result.ready and result.reason is None and result.message is None


def test_no_template(make_campaign):
    r = validate_ready_to_send(make_campaign(email_template_id=None))
    assert (r.reason, r.message) == ("no_template", "Campaign must have an email template selected")


def test_no_audience(make_campaign):
    r = validate_ready_to_send(make_campaign(audience=None))
    assert (r.reason, r.message) == ("no_audience", "Campaign must have an audience configured")


def _no_default_sender(org):
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(default_from_email="", default_from_name="")


def test_no_from_email(make_campaign, org):
    _no_default_sender(org)
    r = validate_ready_to_send(make_campaign(from_email=None))
    assert (r.reason, r.message) == ("no_from_email", "Campaign must have a from email address")


def test_a_campaign_naming_no_sender_uses_the_organizations_default(make_campaign, org):
    from campaigns.sender import campaign_sender

    campaign = make_campaign(from_email=None, from_name=None)
    assert validate_ready_to_send(campaign).ready
    sender = campaign_sender(campaign)
    assert (sender.email, sender.name) == ("news@acme.test", "Acme News")


@pytest.mark.parametrize(("status", "word"), [("suspended", "suspended"), ("banned", "permanently disabled")])
def test_sending_not_allowed(make_campaign, org, status, word):
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(abuse_status=status)
    r = validate_ready_to_send(make_campaign())
    assert r.reason == "sending_not_allowed" and word in r.message


def test_no_delivery_provider(make_campaign, settings):
    campaign = make_campaign()
    settings.EMAIL_PROVIDER = ""
    r = validate_ready_to_send(campaign)
    assert r.reason == "no_delivery_provider"
    assert r.message.startswith("Cannot send campaign: no email delivery provider is configured")


def test_domain_not_verified(make_campaign, org):
    from owlat.models import Domain

    r = validate_ready_to_send(make_campaign(from_email="news@other.test"))
    assert r.reason == "domain_not_verified" and '"other.test"' in r.message
    Domain.objects.filter(organization=org).update(status="pending")
    r = validate_ready_to_send(make_campaign())
    assert r.reason == "domain_not_verified" and "not verified" in r.message


def test_sender_not_allowed_unless_curated_or_custom_allowed(make_campaign, org):
    from owlat.models import CampaignSender, OrganizationSettings

    campaign = make_campaign(from_email="promo@acme.test")
    r = validate_ready_to_send(campaign)
    assert r.reason == "sender_not_allowed" and r.message.startswith("Cannot send campaign: ")
    CampaignSender.objects.create(organization=org, email="promo@acme.test", is_enabled=True)
    assert validate_ready_to_send(campaign).ready
    CampaignSender.objects.filter(organization=org).update(is_enabled=False)
    OrganizationSettings.objects.filter(organization=org).update(is_custom_campaign_senders_allowed=True)
    assert validate_ready_to_send(campaign).ready


def test_scheduled_in_past_only_when_given(make_campaign):
    campaign = make_campaign()
    now = timezone.now()
    r = validate_ready_to_send(campaign, scheduled_at=now - dt.timedelta(seconds=1), now=now)
    assert (r.reason, r.message) == ("scheduled_in_past", "Scheduled time must be in the future")
    assert validate_ready_to_send(campaign, scheduled_at=now + dt.timedelta(minutes=5), now=now).ready


def test_first_failing_check_wins(make_campaign, settings):
    campaign = make_campaign(email_template_id=None, audience=None, from_email=None)
    settings.EMAIL_PROVIDER = ""
    assert validate_ready_to_send(campaign, scheduled_at=timezone.now()).reason == CHECK_ORDER[0]
    campaign.email_template_id = None
    campaign.audience = {"kind": "topic", "topicId": "x"}
    assert validate_ready_to_send(campaign).reason == "no_template"


def test_wrappers_refuse_with_the_preflight_reason(make_campaign, org):
    from campaigns.services import campaign_schedule, campaign_send_now

    _no_default_sender(org)
    campaign = make_campaign(from_email=None)
    out = campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u")
    assert not out.ok and out.reason == "no_from_email"
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(default_from_email="news@acme.test")
    out = campaign_schedule(
        authority=SYSTEM,
        campaign_id=make_campaign().pk,
        organization_id=org.pk,
        actor="u",
        scheduled_at=timezone.now() - dt.timedelta(minutes=1),
    )
    assert not out.ok and out.reason == "scheduled_in_past"


def test_wrapper_state_messages(make_campaign, org):
    from campaigns.services import campaign_cancel, campaign_schedule, campaign_send_now, campaign_unschedule

    campaign = make_campaign()
    out = campaign_cancel(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u")
    assert (out.reason, out.message) == (
        "illegal_edge",
        "Only scheduled, sending or paused campaigns can be cancelled",
    )
    out = campaign_unschedule(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u")
    assert out.reason == "illegal_edge"
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    out = campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u")
    assert out.message == "Only draft or scheduled campaigns can be sent"
    out = campaign_schedule(
        authority=SYSTEM,
        campaign_id=campaign.pk,
        organization_id=org.pk,
        actor="u",
        scheduled_at=timezone.now() + dt.timedelta(hours=1),
    )
    assert out.message == "Only draft campaigns can be scheduled"


def test_reschedule_is_not_a_transition(make_campaign, org):
    from campaigns.services import campaign_schedule
    from owlat.models import AuditLog, DueTask

    campaign = make_campaign()
    first = timezone.now() + dt.timedelta(hours=1)
    assert campaign_schedule(
        authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u", scheduled_at=first
    ).ok
    later = first + dt.timedelta(hours=1)
    out = campaign_schedule(
        authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u", scheduled_at=later
    )
    assert out.ok and out.applied == "rescheduled"
    campaign.refresh_from_db()
    assert campaign.status == "scheduled" and campaign.scheduled_at == later
    audit = AuditLog.objects.filter(action="campaign.scheduled").order_by("-created_at").first()
    assert audit.details["rescheduled"] is True
    assert DueTask.objects.filter(func__endswith="campaign_send_start_task").count() == 2


@pytest.mark.parametrize("drift", ["template_deleted", "org_suspended", "domain_unverified"])
def test_drift_between_scheduling_and_firing_is_caught_at_fire_time(make_campaign, org, template, drift):
    """CMP-24: the orchestrator re-runs pre-flight; a failure skips without touching recipients."""
    from campaigns.orchestrator import start_campaign_send
    from campaigns.services import campaign_schedule
    from delivery.models import EmailSend
    from owlat.models import Domain, OrganizationSettings

    campaign = make_campaign()
    when = timezone.now() + dt.timedelta(minutes=5)
    assert campaign_schedule(
        authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u", scheduled_at=when
    ).ok
    if drift == "template_deleted":
        template.delete()
    elif drift == "org_suspended":
        OrganizationSettings.objects.filter(organization=org).update(abuse_status="suspended")
    else:
        Domain.objects.filter(organization=org).update(status="failed")
    result = start_campaign_send(campaign.pk, now=when + dt.timedelta(seconds=1))
    assert result.startswith("skipped: Pre-flight failed: ")
    campaign.refresh_from_db()
    assert campaign.status == "scheduled"
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()
