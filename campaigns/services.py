"""Campaign writes other than status (create, edit, delete, duplicate) and the CMP-11 user actions, which check
their preconditions and pre-flight (CMP-21) and then call the lifecycle. Shared by the admin, the API and the
commands. Every action returns an `Outcome` (never raises for business outcomes)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.authz import refusal
from campaigns.lifecycle import (
    CANCELLED,
    DRAFT,
    LEGAL_EDGES,
    ORCHESTRATOR_TASK,
    PAUSED,
    SCHEDULED,
    SENDING,
    TERMINAL,
    campaign_transition,
    is_system_actor,
)
from campaigns.models import Campaign
from campaigns.preflight import validate_ready_to_send
from campaigns.queues import control_queue
from owlat.lifecycle import Outcome
from owlat.permissions import Authority

EDITABLE = (
    "name",
    "email_template_id",
    "from_name",
    "from_email",
    "reply_to",
    "subject",
    "audience",
    "archive_enabled",
)
NOT_DRAFT_MESSAGE = "Cannot modify a campaign that is not in draft status"


class CampaignError(Exception):
    """A refused write: `reason` for `data.reason`, `message` for the user, `field` when an input is at fault."""

    def __init__(
        self, reason: str, message: str, *, field: str | None = None, category: str = "invalid_state"
    ):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.field = field
        self.category = category


# --- create / edit / delete / duplicate (CMP-01, CMP-11) -------------------------------------------------------


def _clean_fields(organization_id: Any, fields: dict[str, Any]) -> dict[str, Any]:
    from campaigns.audience import AudienceError, audience_clean
    from templates.models import EmailTemplate

    values = {k: v for k, v in fields.items() if k in EDITABLE}
    if "name" in values:
        name = (values["name"] or "").strip()
        if not name:
            raise CampaignError("invalid_input", "Name is required", field="name", category="invalid_input")
        values["name"] = name[:200]
    if values.get("email_template_id"):
        try:
            ok = EmailTemplate.objects.filter(
                pk=values["email_template_id"], organization_id=organization_id
            ).exists()
        except Exception:  # a malformed id
            ok = False
        if not ok:
            raise CampaignError(
                "invalid_input", "Email template not found", field="emailTemplateId", category="invalid_input"
            )
    if "audience" in values:
        try:
            values["audience"] = audience_clean(organization_id, values["audience"])
        except AudienceError as exc:
            raise CampaignError(
                "invalid_input", exc.message, field=exc.field, category="invalid_input"
            ) from exc
    for key in ("from_email", "reply_to"):
        if values.get(key):
            from owlat.contacts import is_valid_email

            if not is_valid_email(values[key]):
                field = "fromEmail" if key == "from_email" else "replyTo"
                raise CampaignError(
                    "invalid_input", "Invalid email format", field=field, category="invalid_input"
                )
    return values


def _authorize(organization_id: Any, authority: Authority, verb: str) -> None:
    """`campaigns:manage` (CMP-11) and the `campaigns` flag, else `CampaignError` (category `forbidden`)."""
    refused = refusal(
        organization_id, authority, "campaigns:manage", f"You are not allowed to {verb} campaigns"
    )
    if refused:
        raise CampaignError(refused.reason or "forbidden", refused.message or "", category="forbidden")


def campaign_create(
    *, organization_id: Any, actor: str, fields: dict[str, Any], authority: Authority
) -> Campaign:
    """CMP-01: a `draft`; audit `campaign.created`, analytics `campaign_created` (not for `system:` actors)."""
    from owlat.analytics import capture
    from owlat.audit import audit_write

    _authorize(organization_id, authority, "create")
    values = _clean_fields(organization_id, fields)
    if not values.get("name"):
        raise CampaignError("invalid_input", "Name is required", field="name", category="invalid_input")
    with transaction.atomic():
        campaign = Campaign.objects.create(organization_id=organization_id, **values)
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="campaign.created",
            resource="campaign",
            resource_id=str(campaign.pk),
            details={"name": campaign.name},
        )
        if not is_system_actor(actor):
            capture(distinct_id=actor, event="campaign_created", properties={"campaignId": str(campaign.pk)})
    return campaign


def campaign_update(
    *, campaign: Campaign, actor: str, changes: dict[str, Any], authority: Authority
) -> Campaign:
    """Draft only (CMP-11)."""
    from owlat.audit import audit_write

    _authorize(campaign.organization_id, authority, "edit")
    values = _clean_fields(campaign.organization_id, changes)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if locked.status != DRAFT:
            raise CampaignError("not_draft", NOT_DRAFT_MESSAGE)
        changed = [k for k, v in values.items() if getattr(locked, k) != v]
        for key in changed:
            setattr(locked, key, values[key])
        if changed:
            locked.save(update_fields=[*changed, "updated_at"])
            audit_write(
                organization_id=locked.organization_id,
                actor=actor,
                action="campaign.updated",
                resource="campaign",
                resource_id=str(locked.pk),
                details={"fields": changed},
            )
    return locked


def campaign_delete(*, campaign: Campaign, actor: str, authority: Authority) -> None:
    """Not while `sending` (CMP-11); audit `campaign.deleted`."""
    from owlat.audit import audit_write

    _authorize(campaign.organization_id, authority, "delete")
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if locked.status == SENDING:
            raise CampaignError("campaign_sending", "Cannot delete a campaign while it is sending")
        audit_write(
            organization_id=locked.organization_id,
            actor=actor,
            action="campaign.deleted",
            resource="campaign",
            resource_id=str(locked.pk),
            details={"name": locked.name},
        )
        locked.delete()


def campaign_duplicate(*, campaign: Campaign, actor: str, authority: Authority) -> Campaign:
    """A new draft "Copy of <name>" with template, sender, subject and audience (unfrozen)."""
    _authorize(campaign.organization_id, authority, "duplicate")
    audience = dict(campaign.audience) if isinstance(campaign.audience, dict) else None
    if audience:
        audience.pop("frozenFilters", None)
        audience.pop("frozenAt", None)
    return campaign_create(
        organization_id=campaign.organization_id,
        actor=actor,
        authority=authority,
        fields={
            "name": f"Copy of {campaign.name}"[:200],
            "email_template_id": campaign.email_template_id,
            "from_name": campaign.from_name,
            "from_email": campaign.from_email,
            "reply_to": campaign.reply_to,
            "subject": campaign.subject,
            "audience": audience,
        },
    )


# --- CMP-11 user actions ----------------------------------------------------------------------------------------


def _state_refusal(campaign: Campaign, to: str, message: str) -> Outcome:
    reason = "terminal" if campaign.status in TERMINAL else "illegal_edge"
    return Outcome(
        ok=False,
        reason=reason,
        message=message,
        from_state=campaign.status,
        to_state=to,
        object_id=campaign.pk,
    )


def _lifecycle_message(verb: str, outcome: Outcome) -> Outcome:
    """CMP-06: wrappers report lifecycle failures as "Cannot <verb> campaign: <reason>"."""
    if outcome.ok or outcome.reason == "campaign_not_found":
        return outcome
    return Outcome(
        ok=False,
        reason=outcome.reason,
        message=f"Cannot {verb} campaign: {outcome.reason}",
        from_state=outcome.from_state,
        to_state=outcome.to_state,
        object_id=outcome.object_id,
    )


def _load(campaign_id: Any, organization_id: Any) -> Campaign | None:
    qs = Campaign.objects.filter(pk=campaign_id)
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    try:
        return qs.first()
    except Exception:  # a malformed id
        return None


def _load_for(
    campaign_id: Any, organization_id: Any, authority: Authority, permission: str, action: str
) -> Campaign | Outcome:
    """The campaign a transition acts on, or its refusal: not allowed (`authority` is required:
    a member's role, or an explicitly named upstream grant), then not found."""
    refused = refusal(organization_id, authority, permission, f"You are not allowed to {action} campaigns")
    if refused:
        return refused
    campaign = _load(campaign_id, organization_id)
    if campaign is None:
        return Outcome(ok=False, reason="campaign_not_found", message="Campaign not found")
    return campaign


def campaign_schedule(
    *,
    campaign_id: Any,
    organization_id: Any,
    actor: str,
    scheduled_at: dt.datetime,
    use_recipient_timezone: bool = False,
    scheduled_hour: int | None = None,
    scheduled_minute: int | None = None,
    authority: Authority,
    now: dt.datetime | None = None,
) -> Outcome:
    """draft → `scheduled` after pre-flight; on a `scheduled` campaign, the CMP-11 reschedule."""
    campaign = _load_for(campaign_id, organization_id, authority, "campaigns:schedule", "schedule")
    if isinstance(campaign, Outcome):
        return campaign
    tz_options = {
        "use_recipient_timezone": bool(use_recipient_timezone),
        "scheduled_hour": scheduled_hour,
        "scheduled_minute": scheduled_minute,
    }
    if campaign.status == SCHEDULED:
        return campaign_reschedule(
            campaign=campaign, actor=actor, scheduled_at=scheduled_at, now=now, **tz_options
        )
    if campaign.status != DRAFT:
        return _state_refusal(campaign, SCHEDULED, "Only draft campaigns can be scheduled")
    preflight = validate_ready_to_send(campaign, scheduled_at=scheduled_at, now=now)
    if not preflight.ready:
        return Outcome(ok=False, reason=preflight.reason, message=preflight.message, object_id=campaign.pk)
    outcome = campaign_transition(
        campaign_id=campaign.pk,
        to=SCHEDULED,
        actor=actor,
        input={"scheduled_at": scheduled_at, **tz_options},
        at=now,
    )
    return _lifecycle_message("schedule", outcome)


def campaign_reschedule(
    *,
    campaign: Campaign,
    actor: str,
    scheduled_at: dt.datetime,
    use_recipient_timezone: bool = False,
    scheduled_hour: int | None = None,
    scheduled_minute: int | None = None,
    now: dt.datetime | None = None,
) -> Outcome:
    """CMP-11: scheduled only, `at` in the future; fields updated, audit `campaign.scheduled` with
    `rescheduled: true`, a new orchestrator hop at `at` (the old one finds "Not yet due"); no transition."""
    from owlat.audit import audit_write
    from owlat.jobs import enqueue

    now = now or timezone.now()
    if scheduled_at <= now:
        return Outcome(ok=False, reason="scheduled_in_past", message="Scheduled time must be in the future")
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if locked.status != SCHEDULED:
            return _state_refusal(locked, SCHEDULED, "Only scheduled campaigns can be rescheduled")
        Campaign.objects.filter(pk=locked.pk).update(
            scheduled_at=scheduled_at,
            use_recipient_timezone=use_recipient_timezone,
            scheduled_hour=scheduled_hour,
            scheduled_minute=scheduled_minute,
            updated_at=now,
        )
        audit_write(
            organization_id=locked.organization_id,
            actor=actor,
            action="campaign.scheduled",
            resource="campaign",
            resource_id=str(locked.pk),
            details={
                "previousStatus": SCHEDULED,
                "newStatus": SCHEDULED,
                "scheduledAt": scheduled_at.isoformat(),
                "rescheduled": True,
            },
        )
        enqueue(ORCHESTRATOR_TASK, str(locked.pk), at=scheduled_at, queue=control_queue())
    return Outcome(
        ok=True, applied="rescheduled", from_state=SCHEDULED, to_state=SCHEDULED, object_id=campaign.pk
    )  # type: ignore[arg-type]


def campaign_unschedule(
    *, campaign_id: Any, organization_id: Any, actor: str, authority: Authority
) -> Outcome:
    campaign = _load_for(campaign_id, organization_id, authority, "campaigns:schedule", "unschedule")
    if isinstance(campaign, Outcome):
        return campaign
    if campaign.status != SCHEDULED:
        return _state_refusal(campaign, DRAFT, "Only scheduled campaigns can be unscheduled")
    return _lifecycle_message(
        "unschedule", campaign_transition(campaign_id=campaign.pk, to=DRAFT, actor=actor)
    )


def campaign_cancel(*, campaign_id: Any, organization_id: Any, actor: str, authority: Authority) -> Outcome:
    """scheduled, sending or paused → `cancelled`, for good: a send's rows still waiting end `cancelled`
    (what was handed to the provider keeps its outcome). Scheduled: `campaigns:schedule`; a send: `campaigns:send`."""
    campaign = _load(campaign_id, organization_id)
    scope = "campaigns:send" if campaign is not None and campaign.status in (SENDING, PAUSED) else None
    campaign = _load_for(campaign_id, organization_id, authority, scope or "campaigns:schedule", "cancel")
    if isinstance(campaign, Outcome):
        return campaign
    if campaign.status not in (SCHEDULED, SENDING, PAUSED):
        return _state_refusal(
            campaign, CANCELLED, "Only scheduled, sending or paused campaigns can be cancelled"
        )
    return _lifecycle_message(
        "cancel", campaign_transition(campaign_id=campaign.pk, to=CANCELLED, actor=actor)
    )


def campaign_pause(*, campaign_id: Any, organization_id: Any, actor: str, authority: Authority) -> Outcome:
    """sending → `paused`: the walk stops at its next page and the pool hands out none of the campaign's rows
    (each job re-checks every second); resume goes on where it stopped. `campaigns:send`."""
    campaign = _load_for(campaign_id, organization_id, authority, "campaigns:send", "pause")
    if isinstance(campaign, Outcome):
        return campaign
    if campaign.status != SENDING:
        return _state_refusal(campaign, PAUSED, "Only sending campaigns can be paused")
    return _lifecycle_message("pause", campaign_transition(campaign_id=campaign.pk, to=PAUSED, actor=actor))


def campaign_resume(*, campaign_id: Any, organization_id: Any, actor: str, authority: Authority) -> Outcome:
    """paused → `sending`: the rows still waiting go back to the pool and the walk goes on from its checkpoint;
    nobody already mailed is mailed again (one send row per contact). `campaigns:send`."""
    campaign = _load_for(campaign_id, organization_id, authority, "campaigns:send", "resume")
    if isinstance(campaign, Outcome):
        return campaign
    if campaign.status != PAUSED:
        return _state_refusal(campaign, SENDING, "Only paused campaigns can be resumed")
    return _lifecycle_message("resume", campaign_transition(campaign_id=campaign.pk, to=SENDING, actor=actor))


def campaign_send_now(
    *,
    campaign_id: Any,
    organization_id: Any,
    actor: str,
    authority: Authority,
    now: dt.datetime | None = None,
) -> Outcome:
    """draft or scheduled → `sending` after pre-flight (CMP-11)."""
    campaign = _load_for(campaign_id, organization_id, authority, "campaigns:send", "send")
    if isinstance(campaign, Outcome):
        return campaign
    if campaign.status not in (DRAFT, SCHEDULED):
        return _state_refusal(campaign, SENDING, "Only draft or scheduled campaigns can be sent")
    preflight = validate_ready_to_send(campaign, now=now)
    if not preflight.ready:
        return Outcome(ok=False, reason=preflight.reason, message=preflight.message, object_id=campaign.pk)
    return _lifecycle_message(
        "send", campaign_transition(campaign_id=campaign.pk, to=SENDING, actor=actor, at=now)
    )


#: operator names of the transitions (`campaign_transition` command, admin buttons)
ACTIONS = {
    "send": campaign_send_now,
    "unschedule": campaign_unschedule,
    "cancel": campaign_cancel,
    "pause": campaign_pause,
    "resume": campaign_resume,
}


def allowed_targets(status: str) -> list[str]:
    return sorted(to for frm, to in LEGAL_EDGES if frm == status)


# --- in-use checks for deletes elsewhere ----------------------------------------------------------------------


def _active(qs: Any) -> Any:
    return qs.exclude(status__in=["sent", "cancelled"])


def campaigns_using_template(organization_id: Any, template_id: Any) -> list[dict[str, str]]:
    qs = Campaign.objects.filter(organization_id=organization_id, email_template_id=template_id)
    return [{"kind": "campaign", "id": str(pk)} for pk in _active(qs).values_list("pk", flat=True)[:50]]


def campaigns_using_topic(organization_id: Any, topic_id: Any) -> list[dict[str, str]]:
    qs = Campaign.objects.filter(organization_id=organization_id, audience__topicId=str(topic_id))
    return [{"kind": "campaign", "id": str(pk)} for pk in _active(qs).values_list("pk", flat=True)[:50]]


def campaigns_using_segment(organization_id: Any, segment_id: Any) -> list[dict[str, str]]:
    qs = Campaign.objects.filter(organization_id=organization_id, audience__segmentId=str(segment_id))
    return [{"kind": "campaign", "id": str(pk)} for pk in _active(qs).values_list("pk", flat=True)[:50]]
