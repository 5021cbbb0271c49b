"""The send lifecycle (DLV-05 … DLV-12): the single writer of `status` and its companion fields on both send
tables, keyed by `SendRef(kind, id)`.

Built on the shared runner (`owlat.lifecycle`, D-04) with `self_loop="reducer"` (repeat opens and clicks are
`recorded`, other repeats `duplicate`) and no audit rows (the timestamps are the history). The reducer is pure:
it returns the patch, the effects and how the input applied. Effects run in the same transaction:
campaign counters (DLV-10), contact activities (DLV-11, DOM-11), soft-bounce counting and suppression (DLV-12),
customer webhooks (DOM-18), completion handlers (DLV-18) and complaint handlers (registry, style.md Layering).
`test` sends run the lifecycle but emit no effects.

This module also holds the D-07 claim and hand-off compare-and-sets: they are the only other writes of the
claim fields and they never touch `status`.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from delivery.models import BounceType, CampaignSendCounters, EmailSend, SendAttachment, TransactionalSend
from delivery.models import SendStatus as S
from owlat.lifecycle import Call, Decision, Effect, Lifecycle, Move, Outcome, legal_edges
from owlat.sending_stats import sending_stats_bump

logger = logging.getLogger(__name__)

RefKind = Literal["campaign", "transactional"]
EVENTS = (S.SENT, S.FAILED, S.DELIVERED, S.OPENED, S.CLICKED, S.BOUNCED, S.COMPLAINED)
SOFT_BOUNCE_SUPPRESSION_THRESHOLD = 5
CLAIM_LEASE = dt.timedelta(minutes=5)  # D-07
UNKNOWN_OUTCOME_DEADLINE = dt.timedelta(hours=24)  # D-07
ACTOR = "system:delivery"


@dataclass(frozen=True)
class SendRef:
    """DLV-05: `{kind: 'campaign', id}` → EmailSend, `{kind: 'transactional', id}` → TransactionalSend."""

    kind: RefKind
    id: str

    @classmethod
    def of(cls, send: EmailSend | TransactionalSend) -> SendRef:
        return cls(send.ref_kind, str(send.pk))

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "id": self.id}


def model_for(kind: str) -> type[EmailSend] | type[TransactionalSend]:
    if kind == "campaign":
        return EmailSend
    if kind == "transactional":
        return TransactionalSend
    raise ValueError(f"unknown send ref kind {kind!r}")


# --- Registries filled by higher layers in AppConfig.ready() (style.md, Layering) ------------------------

CompletionHandler = Callable[[Any], None]
ComplaintHandler = Callable[[Any], None]
_completion_handlers: dict[str, list[CompletionHandler]] = defaultdict(list)
_complaint_handlers: dict[str, list[ComplaintHandler]] = defaultdict(list)


def register_completion_handler(kind: str, fn: CompletionHandler) -> CompletionHandler:
    """`fn(send)` runs inside the transaction of every applied transition of a `kind` row out of `queued`
    (DLV-18): campaigns registers `try_complete_campaign` for `campaign`, the inbox its AGT-23 hook for
    `agent_reply`. `kind` is the send kind (`campaign`, `transactional`, `automation`, `agent_reply`, `test`)."""
    if fn not in _completion_handlers[kind]:
        _completion_handlers[kind].append(fn)
    return fn


def register_complaint_handler(kind: str, fn: ComplaintHandler) -> ComplaintHandler:
    """`fn(send)` runs when a `kind` row first becomes `complained` (DLV-11: the campaign's content-scan flag)."""
    if fn not in _complaint_handlers[kind]:
        _complaint_handlers[kind].append(fn)
    return fn


def completion_handlers(kind: str) -> tuple[CompletionHandler, ...]:
    return tuple(_completion_handlers.get(kind, ()))


def complaint_handlers(kind: str) -> tuple[ComplaintHandler, ...]:
    return tuple(_complaint_handlers.get(kind, ()))


# --- The pure reducer ---------------------------------------------------------------------------------


def _iso(at: dt.datetime | None) -> str | None:
    return at.isoformat().replace("+00:00", "Z") if at else None


def _webhook_payload(send: Any, at: dt.datetime, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "sendId": str(send.pk),
        "kind": send.send_kind,
        "email": send.recipient,
        "contactId": str(send.contact_id) if send.contact_id else None,
        "at": _iso(at),
    }
    if send.send_kind == "campaign":
        payload["campaignId"] = str(send.campaign_id)
    elif getattr(send, "automation_id", None):
        payload["automationId"] = str(send.automation_id)
    payload.update(extra)
    return payload


def _activity_metadata(send: Any, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"sendId": str(send.pk), "kind": send.send_kind}
    if send.send_kind == "campaign":
        meta["campaignId"] = str(send.campaign_id)
    elif getattr(send, "automation_id", None):
        meta["automationId"] = str(send.automation_id)
    elif getattr(send, "transactional_email_id", None):
        meta["transactionalEmailId"] = str(send.transactional_email_id)
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta


class _Effects:
    """Builds the effect list of one reduction (kept empty for `test` sends)."""

    def __init__(self, send: Any, at: dt.datetime) -> None:
        self.send = send
        self.at = at
        self.items: list[Effect] = []
        self.counters: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def count(self, **deltas: int) -> None:
        """Campaign counters (DLV-10) and the organization's daily / per-domain sending stats (DLV-11)."""
        if self.send.send_kind == "campaign":
            for key, value in deltas.items():
                self.counters[key] = self.counters.get(key, 0) + value
        self.stat(**deltas)

    def stat(self, **deltas: int) -> None:
        for key, value in deltas.items():
            self.stats[key] = self.stats.get(key, 0) + value

    def add(self, name: str, **kwargs: Any) -> None:
        self.items.append(Call(name, kwargs))

    def activity(self, activity_type: str, at: dt.datetime, **meta: Any) -> None:
        if self.send.contact_id:
            self.add(
                "activity",
                activity_type=activity_type,
                metadata=_activity_metadata(self.send, **meta),
                at=at,
            )

    def webhook(self, event_type: str, at: dt.datetime, **extra: Any) -> None:
        self.add("webhook", event_type=event_type, payload=_webhook_payload(self.send, at, **extra))

    def delivered(self, at: dt.datetime) -> None:
        """DLV-08 effects of the first delivery evidence."""
        self.count(delivered=1)
        self.webhook("email.delivered", at)
        self.add("reset_soft_bounces")

    def build(self) -> tuple[Effect, ...]:
        if self.send.send_kind == "test":
            return ()
        items = list(self.items)
        if self.counters:
            items.insert(0, Call("counters", {"deltas": dict(self.counters)}))
        if self.stats:
            items.insert(0, Call("sending_stats", {"deltas": dict(self.stats), "day": self.at.date()}))
        return tuple(items)


@functools.cache
def _sources(model: type) -> frozenset[str]:
    return frozenset(src for src, _ in legal_edges(model, "status"))


def _has_edges(model: type, state: str) -> bool:
    return state in _sources(model)


def reduce_send(send: Any, frm: str, to: str, *, input: dict[str, Any], at: dt.datetime) -> Decision:
    """DLV-06 … DLV-08, DLV-10 … DLV-12 as a pure function of the row, the event and its input."""
    if to not in EVENTS:
        return Decision.refuse("invalid_for_kind")

    def not_legal() -> Decision:
        # DLV-06: a hard-bounced row is terminal although `bounced` has (soft-only) edges in the graph.
        hard_bounced = frm == S.BOUNCED and send.bounce_type == BounceType.HARD
        return Decision.refuse(
            "illegal_edge" if _has_edges(type(send), frm) and not hard_bounced else "terminal"
        )

    fx = _Effects(send, at)
    patch: dict[str, Any] = {}

    def evidence() -> None:
        """DLV-08: the first delivery evidence on a row that left `queued` sets `delivered_at`."""
        if send.delivered_at is None and frm != S.QUEUED:
            patch["delivered_at"] = at
            fx.delivered(at)

    if to == S.SENT:
        if frm == S.SENT:
            return Decision.accept({}, applied="duplicate")
        if frm != S.QUEUED:
            return not_legal()
        patch.update(
            status=S.SENT,
            sent_at=at,
            provider_message_id=input.get("provider_message_id") or send.provider_message_id,
            provider_type=input.get("provider_type") or send.provider_type,
            outcome_unknown=False,
        )
        fx.count(sent=1)
        fx.activity("email_sent", at, subject=getattr(send, "personalized_subject", None) or None)
        fx.webhook("email.sent", at)
        if send.send_kind == "transactional":
            fx.add("delete_attachments")
        fx.add("complete")
        return Decision.accept(patch, fx.build())

    if to == S.FAILED:
        if frm == S.FAILED:
            return Decision.accept({}, applied="duplicate")
        if frm not in (S.QUEUED, S.SENT):
            return not_legal()
        patch.update(
            status=S.FAILED,
            failed_at=at,
            error_message=input.get("error_message"),
            error_code=input.get("error_code"),
            outcome_unknown=False,
        )
        fx.count(failed=1)
        if send.send_kind == "transactional":
            fx.add("delete_attachments")
        if frm == S.QUEUED:
            fx.add("complete")
        return Decision.accept(patch, fx.build())

    if frm == S.QUEUED:
        return Decision.refuse("illegal_edge")

    if to == S.DELIVERED:
        if frm == S.SENT:
            patch.update(status=S.DELIVERED, delivered_at=send.delivered_at or at)
            if send.delivered_at is None:
                fx.delivered(at)
            return Decision.accept(patch, fx.build())
        if frm in (S.FAILED, S.BOUNCED):
            # DLV-08: still attributed when not after the failure / bounce; otherwise not a legal move.
            limit = send.failed_at if frm == S.FAILED else send.bounced_at
            if send.delivered_at is None and limit is not None and at <= limit:
                patch["delivered_at"] = at
                fx.delivered(at)
                return Decision.accept(patch, fx.build(), applied="recorded")
            if send.delivered_at is not None:
                return Decision.accept({}, applied="duplicate")
            return not_legal()
        # delivered, opened, clicked, complained: a late acceptance never moves an advanced row backwards.
        if send.delivered_at is None:
            patch["delivered_at"] = at
            fx.delivered(at)
            return Decision.accept(patch, fx.build(), applied="recorded")
        return Decision.accept({}, applied="duplicate")

    if frm == S.FAILED:
        return not_legal()

    if to == S.OPENED:
        patch["open_count"] = (send.open_count or 0) + 1
        applied = "recorded"
        if send.opened_at is None:
            patch["opened_at"] = at
            if frm in (S.SENT, S.DELIVERED):
                patch["status"] = S.OPENED
                applied = "transitioned"
            fx.count(opened=1)
            fx.activity("email_opened", at)
            fx.webhook("email.opened", at)
        evidence()
        return Decision.accept(patch, fx.build(), applied=applied)

    if to == S.CLICKED:
        url = str(input.get("url") or "")
        patch["clicked_links"] = [*(send.clicked_links or []), {"url": url, "clickedAt": _iso(at)}]
        applied = "recorded"
        if send.clicked_at is None:
            patch["clicked_at"] = at
            if frm in (S.SENT, S.DELIVERED, S.OPENED):
                patch["status"] = S.CLICKED
                applied = "transitioned"
            fx.count(clicked=1)
            fx.activity("email_clicked", at, url=url)
        fx.webhook("email.clicked", at, url=url)
        evidence()
        return Decision.accept(patch, fx.build(), applied=applied)

    if to == S.BOUNCED:
        bounce_type = input.get("bounce_type")
        if bounce_type not in (BounceType.HARD, BounceType.SOFT):
            bounce_type = BounceType.HARD
        if frm == S.COMPLAINED:
            return not_legal()
        message = input.get("bounce_message")
        if frm == S.BOUNCED:
            if send.bounce_type == BounceType.HARD or bounce_type == BounceType.SOFT:
                return Decision.accept({}, applied="duplicate")
            # soft → hard hardening (DLV-07, DLV-10): soft −1, hard +1, bounced unchanged.
            patch.update(status=S.BOUNCED, bounced_at=at, bounce_type=BounceType.HARD, error_message=message)
            fx.count(soft_bounced=-1, hard_bounced=1)
            fx.add("suppress", reason="bounced", bounce_type=BounceType.HARD)
            fx.activity("email_bounced", at, bounceType=BounceType.HARD, message=message)
            fx.webhook("email.bounced", at, bounceType=BounceType.HARD, message=message)
            return Decision.accept(patch, fx.build())
        patch.update(status=S.BOUNCED, bounced_at=at, bounce_type=bounce_type, error_message=message)
        if bounce_type == BounceType.HARD:
            fx.count(bounced=1, hard_bounced=1)
            fx.add("suppress", reason="bounced", bounce_type=BounceType.HARD)
        else:
            fx.count(bounced=1, soft_bounced=1)
            fx.add("soft_bounce")
        fx.activity("email_bounced", at, bounceType=bounce_type, message=message)
        fx.webhook("email.bounced", at, bounceType=bounce_type, message=message)
        return Decision.accept(patch, fx.build())

    # to == complained
    if frm == S.COMPLAINED:
        return Decision.accept({}, applied="duplicate")
    if frm == S.BOUNCED and send.bounce_type == BounceType.HARD:
        return not_legal()
    patch.update(status=S.COMPLAINED, complained_at=at)
    fx.stat(complained=1)
    fx.activity("email_complained", at)
    fx.webhook("email.complained", at)
    fx.add("suppress", reason="complained", bounce_type=None)
    fx.add("complained")
    evidence()
    return Decision.accept(patch, fx.build())


# --- Effect handlers ------------------------------------------------------------------------------------


def _apply_counters(organization_id: str, campaign_id: str, deltas: dict[str, int]) -> None:
    deltas = {k: v for k, v in deltas.items() if v}
    if not deltas:
        return
    updates = {k: F(k) + v for k, v in deltas.items()}
    updated = CampaignSendCounters.objects.filter(campaign_id=campaign_id).update(
        **updates, updated_at=timezone.now()
    )
    if not updated:
        CampaignSendCounters.objects.get_or_create(
            campaign_id=campaign_id, defaults={"organization_id": organization_id}
        )
        CampaignSendCounters.objects.filter(campaign_id=campaign_id).update(
            **updates, updated_at=timezone.now()
        )


def _run_completion(send: Any) -> None:
    for handler in completion_handlers(send.send_kind):
        handler(send)


def _has_webhook_endpoints(organization_id: Any) -> bool:
    from owlat.models import WebhookEndpoint

    return WebhookEndpoint.objects.filter(organization_id=organization_id, is_active=True).exists()


def _fx_counters(send: Any, *, deltas: dict[str, int]) -> None:
    _apply_counters(str(send.organization_id), str(send.campaign_id), deltas)


def _sender_domain(send: Any) -> str:
    """The sending domain, from the row's stable Message-ID (`<…@domain>`, set before hand-off)."""
    return (getattr(send, "message_id", None) or "").rpartition("@")[2].strip("<> ").lower()


def _fx_sending_stats(send: Any, *, deltas: dict[str, int], day: dt.date) -> None:
    sending_stats_bump(
        organization_id=send.organization_id, sender_domain=_sender_domain(send), day=day, deltas=deltas
    )


def _fx_activity(send: Any, *, activity_type: str, metadata: dict, at: dt.datetime) -> None:
    from owlat.activities import activity_record

    activity_record(
        organization_id=send.organization_id,
        contact_id=send.contact_id,
        activity_type=activity_type,
        metadata=metadata,
        at=at,
    )


def _fx_webhook(send: Any, *, event_type: str, payload: dict) -> None:
    if not _has_webhook_endpoints(send.organization_id):
        return
    from owlat.webhooks import webhook_emit

    webhook_emit(organization_id=send.organization_id, event_type=event_type, payload=payload)


def _fx_reset_soft_bounces(send: Any) -> None:
    from owlat.models import Contact

    if send.contact_id:
        Contact.objects.filter(pk=send.contact_id, soft_bounce_count__gt=0).update(soft_bounce_count=0)


def _source(send: Any) -> tuple[str, str]:
    return ("emailSend" if send.ref_kind == "campaign" else "transactionalSend", str(send.pk))


def _fx_suppress(send: Any, *, reason: str, bounce_type: str | None) -> None:
    from owlat.suppression import suppress

    source_type, source_id = _source(send)
    suppress(
        organization_id=send.organization_id,
        email=send.recipient,
        reason=reason,
        bounce_type=bounce_type,
        source_type=source_type,
        source_id=source_id,
    )


def _fx_soft_bounce(send: Any) -> None:
    """DLV-12: count once per send; at exactly the threshold, suppress `bounced`/`soft`."""
    from owlat.models import Contact

    if not send.contact_id:
        return
    Contact.objects.filter(pk=send.contact_id).update(soft_bounce_count=F("soft_bounce_count") + 1)
    count = Contact.objects.filter(pk=send.contact_id).values_list("soft_bounce_count", flat=True).first()
    if count == SOFT_BOUNCE_SUPPRESSION_THRESHOLD:
        _fx_suppress(send, reason="bounced", bounce_type=BounceType.SOFT)


def _fx_complete(send: Any) -> None:
    _run_completion(send)


# Batch handlers (`transition_many`): what can be merged across the rows of one batch is applied once.


def _merged(items: list[tuple[Any, dict[str, Any]]], key: Any) -> dict[Any, dict[str, int]]:
    merged: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for send, kwargs in items:
        bucket = merged[key(send, kwargs)]
        for name, value in kwargs["deltas"].items():
            bucket[name] += value
    return merged


def _fx_counters_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Counter increments merged per campaign."""
    for (organization_id, campaign_id), deltas in _merged(
        items, lambda send, kw: (str(send.organization_id), str(send.campaign_id))
    ).items():
        _apply_counters(organization_id, campaign_id, dict(deltas))


def _fx_sending_stats_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Daily sending stats merged per (organization, day, sender domain)."""
    for (organization_id, day, domain), deltas in _merged(
        items, lambda send, kw: (str(send.organization_id), kw["day"], _sender_domain(send))
    ).items():
        sending_stats_bump(
            organization_id=organization_id, sender_domain=domain, day=day, deltas=dict(deltas)
        )


# Timeline rows without a contact flag may be inserted in bulk; `email_opened` / `email_clicked` go through
# `activity_record`, which also sets the contact's `has_opened` / `has_clicked` (DLV-11).
_BULK_ACTIVITY_TYPES = frozenset({"email_sent", "email_bounced", "email_complained"})


def _fx_activity_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    from owlat.models import ContactActivity

    rows = []
    for send, kwargs in items:
        if kwargs["activity_type"] in _BULK_ACTIVITY_TYPES:
            rows.append(
                ContactActivity(
                    organization_id=send.organization_id,
                    contact_id=send.contact_id,
                    activity_type=kwargs["activity_type"],
                    metadata=kwargs["metadata"],
                    occurred_at=kwargs["at"],
                )
            )
        else:
            _fx_activity(send, **kwargs)
    if rows:
        ContactActivity.objects.bulk_create(rows, batch_size=500)


def _fx_webhook_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Webhook-endpoint existence looked up once per organization."""
    from owlat.webhooks import webhook_emit

    has_endpoints: dict[str, bool] = {}
    for send, kwargs in items:
        key = str(send.organization_id)
        if key not in has_endpoints:
            has_endpoints[key] = _has_webhook_endpoints(send.organization_id)
        if has_endpoints[key]:
            webhook_emit(organization_id=send.organization_id, **kwargs)


def _fx_complete_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Completion handlers once per campaign (or per non-campaign row), after every row of the batch is
    written."""
    seen: dict[tuple[str, str], Any] = {}
    for send, _ in items:
        seen.setdefault((send.send_kind, str(getattr(send, "campaign_id", None) or send.pk)), send)
    for send in seen.values():
        _run_completion(send)


def _fx_complained(send: Any) -> None:
    for handler in complaint_handlers(send.send_kind):
        handler(send)


def _fx_delete_attachments(send: Any) -> None:
    """DLV-11: stored attachment blobs go on the terminal worker outcome (sent or failed)."""
    if send.ref_kind == "transactional" and send.send_kind == "transactional":
        SendAttachment.objects.filter(send_id=send.pk).delete()


class _SendLifecycle(Lifecycle):
    field = "status"
    not_found_reason = "send_not_found"
    self_loop = "reducer"
    writes_audit = False
    savepoint = False  # every caller holds its own transaction
    messages = {
        "send_not_found": "Send not found",
        "illegal_edge": "Illegal send status change",
        "terminal": "The send is in a terminal state",
        "invalid_for_kind": "Input not valid for this send",
    }

    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        # an event carries its own time (a batch holds rows of different moments)
        return reduce_send(
            obj, frm, to, input=input, at=input["at"] if isinstance(input.get("at"), dt.datetime) else at
        )

    def batch_effect_handlers(self) -> dict[str, Callable[[list[tuple[Any, dict[str, Any]]]], None]]:
        return {
            "counters": _fx_counters_many,
            "sending_stats": _fx_sending_stats_many,
            "activity": _fx_activity_many,
            "webhook": _fx_webhook_many,
            "complete": _fx_complete_many,
        }

    def effect_handlers(self) -> dict[str, Callable[..., None]]:
        return {
            "counters": _fx_counters,
            "sending_stats": _fx_sending_stats,
            "activity": _fx_activity,
            "webhook": _fx_webhook,
            "reset_soft_bounces": _fx_reset_soft_bounces,
            "suppress": _fx_suppress,
            "soft_bounce": _fx_soft_bounce,
            "complete": _fx_complete,
            "complained": _fx_complained,
            "delete_attachments": _fx_delete_attachments,
        }


class CampaignSendLifecycle(_SendLifecycle):
    model = EmailSend
    resource = "email_send"


class TransactionalSendLifecycle(_SendLifecycle):
    model = TransactionalSend
    resource = "transactional_send"


_LIFECYCLES: dict[str, _SendLifecycle] = {
    "campaign": CampaignSendLifecycle(),
    "transactional": TransactionalSendLifecycle(),
}
_EVIDENCE = frozenset({S.DELIVERED, S.OPENED, S.CLICKED, S.BOUNCED, S.COMPLAINED})


def _input_at(input: dict[str, Any]) -> dt.datetime:
    at = input.get("at")
    return at if isinstance(at, dt.datetime) else timezone.now()


def _transition_locked(lifecycle: _SendLifecycle, obj: Any, to: str, input: dict[str, Any]) -> Outcome:
    at = _input_at(input)
    if to in _EVIDENCE and obj.status == S.QUEUED and obj.outcome_unknown:
        # D-07: provider evidence resolves an unknown outcome; the message was accepted at hand-off.
        lifecycle.transition_locked(
            obj,
            S.SENT,
            actor=ACTOR,
            at=min(at, obj.handed_off_at or at),
            input={"provider_message_id": input.get("provider_message_id") or obj.provider_message_id},
        )
    return lifecycle.transition_locked(obj, to, actor=ACTOR, at=at, input=input)


def send_transition(ref: SendRef, to: str, input: dict[str, Any] | None = None) -> Outcome:
    """DLV-05 single entry point. `input` may carry `at` (datetime) and the event's fields. Never raises for
    business outcomes: `Outcome(ok, applied, reason, from_state, to_state, obj)`; `obj.contact_email`."""
    input = dict(input or {})
    lifecycle = _LIFECYCLES[ref.kind]
    try:
        pk = uuid.UUID(str(ref.id))
    except ValueError:
        return Outcome(ok=False, reason="send_not_found", message=lifecycle.message_for("send_not_found"))
    with transaction.atomic():
        obj = lifecycle.model._default_manager.select_for_update().filter(pk=pk).first()
        if obj is None:
            return Outcome(ok=False, reason="send_not_found", message=lifecycle.message_for("send_not_found"))
        return _transition_locked(lifecycle, obj, to, input)


def find_by_provider_message_id(provider_message_id: str) -> SendRef | None:
    """EmailSend first, then TransactionalSend (DLV-05); our own Message-ID also resolves (SMTP, D-07)."""
    value = (provider_message_id or "").strip()
    if not value:
        return None
    bare = value.strip("<>")
    candidates = {value, bare, f"<{bare}>"}
    for model in (EmailSend, TransactionalSend):
        pk = (
            model.objects.filter(Q(provider_message_id__in=candidates) | Q(message_id__in=candidates))
            .values_list("pk", flat=True)
            .first()
        )
        if pk is not None:
            return SendRef(model.ref_kind, str(pk))
    return None


def transition_by_provider_message_id(
    provider_message_id: str, to: str, input: dict[str, Any] | None = None
) -> Outcome:
    """The webhook entry point (DLV-05, DLV-19): resolve the ref, then `send_transition`."""
    ref = find_by_provider_message_id(provider_message_id)
    if ref is None:
        return Outcome(ok=False, reason="send_not_found", message="Send not found")
    return send_transition(ref, to, input)


@dataclass
class Completion:
    """One dispatch result to record (DLV-18)."""

    ref: SendRef
    to: str  # sent | failed
    input: dict[str, Any] = field(default_factory=dict)


def send_transition_many(items: Iterable[Completion]) -> list[Outcome]:
    """The batched variant used by the dispatch worker: the same reducer, graph and effects as
    `send_transition`, for many rows in one transaction on the kernel's set-based runner
    (`Lifecycle.transition_many`, D-04) — rows locked in one query per table, written back with one
    `UPDATE … RETURNING` per table and edge, plain timeline activities inserted with one `bulk_create`,
    counter and sending-stat increments merged, webhook endpoints looked up once per organization, and
    completion handlers called once per campaign (or per non-campaign row) after the rows are written."""
    items = list(items)
    if not items:
        return []
    outcomes: list[Outcome | None] = [None] * len(items)
    with transaction.atomic():
        ids: dict[str, list[uuid.UUID]] = defaultdict(list)
        for item in items:
            try:
                ids[item.ref.kind].append(uuid.UUID(str(item.ref.id)))
            except ValueError:
                continue
        rows: dict[tuple[str, str], Any] = {}
        for kind, pks in ids.items():
            for obj in model_for(kind)._default_manager.select_for_update().filter(pk__in=pks).order_by("pk"):
                rows[(kind, str(obj.pk))] = obj
        found: list[int] = []
        for i, item in enumerate(items):
            if (item.ref.kind, item.ref.id) in rows:
                found.append(i)
            else:
                outcomes[i] = Outcome(ok=False, reason="send_not_found", message="Send not found")
        # D-07: provider evidence on an outcome-unknown row first records the acceptance at hand-off.
        evidence = []
        for i in found:
            item = items[i]
            obj = rows[(item.ref.kind, item.ref.id)]
            if item.to in _EVIDENCE and obj.status == S.QUEUED and obj.outcome_unknown:
                at = _input_at(item.input)
                provider_message_id = item.input.get("provider_message_id") or obj.provider_message_id
                evidence.append(
                    Move(
                        obj,
                        S.SENT,
                        {"at": min(at, obj.handed_off_at or at), "provider_message_id": provider_message_id},
                    )
                )
        # both send tables share one graph, reducer and effects: one runner call covers them
        runner = _LIFECYCLES["campaign"]
        runner.transition_many(evidence, actor=ACTOR)
        moves = [Move(rows[(items[i].ref.kind, items[i].ref.id)], items[i].to, items[i].input) for i in found]
        for i, outcome in zip(found, runner.transition_many(moves, actor=ACTOR), strict=True):
            outcomes[i] = outcome
    return [o for o in outcomes if o is not None]


# --- D-07 claims and hand-off (compare-and-set; they never write `status`) ------------------------------


def _table(model: type) -> str:
    return model._meta.db_table


def claim_sends(
    kind: str, ids: Iterable[str], *, now: dt.datetime | None = None, lease: dt.timedelta = CLAIM_LEASE
) -> tuple[uuid.UUID, list[str]]:
    """Claim the given rows that are still `queued`, not handed off and not under a live claim. Returns the
    claim token and the ids this caller won; a row is never claimed by two callers at once."""
    model = model_for(kind)
    now = now or timezone.now()
    token = uuid.uuid4()
    id_list = [uuid.UUID(str(i)) for i in ids]
    if not id_list:
        return token, []
    expired = now - lease
    if connection.vendor == "postgresql":
        table = _table(model)
        sql = (
            f"UPDATE {table} SET claimed_at = %s, claim_token = %s, "  # table name is ours
            "dispatch_attempts = dispatch_attempts + 1 "
            f"WHERE id = ANY(ARRAY(SELECT id FROM {table} WHERE id = ANY(%s) AND status = 'queued' "
            "AND handed_off_at IS NULL AND deleted_at IS NULL AND (claimed_at IS NULL OR claimed_at < %s) "
            "ORDER BY id FOR UPDATE SKIP LOCKED)) RETURNING id"
        )
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [now, token, id_list, expired])
            won = [str(row[0]) for row in cursor.fetchall()]
        return token, won
    # SQLite form (D-16): writers are serialized (IMMEDIATE transactions), so a conditional UPDATE is a CAS.
    with transaction.atomic():
        model._default_manager.filter(
            Q(claimed_at__isnull=True) | Q(claimed_at__lt=expired),
            pk__in=id_list,
            status=S.QUEUED,
            handed_off_at__isnull=True,
            deleted_at__isnull=True,
        ).update(claimed_at=now, claim_token=token, dispatch_attempts=F("dispatch_attempts") + 1)
        won = [
            str(pk) for pk in model._default_manager.filter(claim_token=token).values_list("pk", flat=True)
        ]
    return token, won


def claim_queued(
    kind: str,
    token: uuid.UUID,
    *,
    limit: int,
    exclude: Iterable[str] = (),
    now: dt.datetime | None = None,
    lease: dt.timedelta = CLAIM_LEASE,
) -> list[str]:
    """Claim up to `limit` more claimable queued rows of `kind`, oldest first, under an existing claim token
    (the transactional pool's jobs top their batch up with rows whose own job has not run yet). Uses the
    partial index on queued rows; on PostgreSQL rows another worker is claiming are skipped, not waited for."""
    if limit <= 0:
        return []
    model = model_for(kind)
    now = now or timezone.now()
    expired = now - lease
    skip = [uuid.UUID(str(i)) for i in exclude]
    if connection.vendor == "postgresql":
        table = _table(model)
        sql = (
            f"UPDATE {table} SET claimed_at = %s, claim_token = %s, "  # table name is ours
            "dispatch_attempts = dispatch_attempts + 1 "
            f"WHERE id = ANY(ARRAY(SELECT id FROM {table} WHERE status = 'queued' AND NOT (id = ANY(%s)) "
            "AND handed_off_at IS NULL AND deleted_at IS NULL AND outcome_unknown = false "
            "AND (claimed_at IS NULL OR claimed_at < %s) AND queued_at <= %s "
            "ORDER BY queued_at LIMIT %s FOR UPDATE SKIP LOCKED)) RETURNING id"
        )
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [now, token, skip, expired, now, limit])
            return [str(row[0]) for row in cursor.fetchall()]
    with transaction.atomic():
        candidates = list(
            model._default_manager.filter(
                Q(claimed_at__isnull=True) | Q(claimed_at__lt=expired),
                status=S.QUEUED,
                handed_off_at__isnull=True,
                deleted_at__isnull=True,
                outcome_unknown=False,
                queued_at__lte=now,
            )
            .exclude(pk__in=skip)
            .order_by("queued_at")
            .values_list("pk", flat=True)[:limit]
        )
        model._default_manager.filter(
            Q(claimed_at__isnull=True) | Q(claimed_at__lt=expired), pk__in=candidates, status=S.QUEUED
        ).update(claimed_at=now, claim_token=token, dispatch_attempts=F("dispatch_attempts") + 1)
        return [
            str(pk)
            for pk in model._default_manager.filter(pk__in=candidates, claim_token=token).values_list(
                "pk", flat=True
            )
        ]


def claim_orphans(
    kind: str, *, limit: int = 100, now: dt.datetime | None = None, older_than: dt.timedelta = CLAIM_LEASE
) -> list[str]:
    """Ids of queued rows that no live job holds: never claimed for longer than the lease, or claimed but
    not handed off with an expired lease (uses the partial index on queued rows). Read-only; the caller
    enqueues a job for them and the job claims them."""
    model = model_for(kind)
    now = now or timezone.now()
    cutoff = now - older_than
    qs = model._default_manager.filter(
        status=S.QUEUED, handed_off_at__isnull=True, deleted_at__isnull=True
    ).filter(Q(claimed_at__isnull=True, queued_at__lt=cutoff) | Q(claimed_at__lt=now - CLAIM_LEASE))
    return [str(pk) for pk in qs.order_by("pk").values_list("pk", flat=True)[:limit]]


def release_claims(kind: str, ids: Iterable[str], token: uuid.UUID) -> int:
    """Give back claimed rows that were not handed off (a batch ran out of time)."""
    model = model_for(kind)
    return model._default_manager.filter(
        pk__in=list(ids), claim_token=token, handed_off_at__isnull=True, status=S.QUEUED
    ).update(claimed_at=None, claim_token=None)


def mark_handed_off(
    kind: str, send_id: str, token: uuid.UUID, *, message_id: str, now: dt.datetime | None = None
) -> bool:
    """Set `handed_off_at` just before the message goes on the wire; False when the claim was lost.
    One statement per message, so it is written without the ORM's per-call query compilation."""
    model = model_for(kind)
    qn = connection.ops.quote_name
    sql = (
        f"UPDATE {qn(_table(model))} SET handed_off_at = %s, message_id = %s "  # table name is ours
        "WHERE id = %s AND claim_token = %s AND handed_off_at IS NULL AND status = 'queued'"
    )
    pk = uuid.UUID(str(send_id))
    if connection.vendor != "postgresql":
        return bool(
            model._default_manager.filter(
                pk=pk, claim_token=token, handed_off_at__isnull=True, status=S.QUEUED
            ).update(handed_off_at=now or timezone.now(), message_id=message_id)
        )
    params: list[Any] = [now or timezone.now(), message_id, pk, token]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount == 1


def mark_outcome_unknown(kind: str, send_id: str, *, error_code: str, error_message: str) -> bool:
    """D-07: the message may have been accepted; keep the row `queued`, flagged, never re-sent automatically.
    An outcome-unknown row counts as finished for campaign completion (CMP-13), so the completion handlers
    run as for a row that left `queued`."""
    model = model_for(kind)
    with transaction.atomic():
        updated = model._default_manager.filter(
            pk=send_id, status=S.QUEUED, handed_off_at__isnull=False, outcome_unknown=False
        ).update(outcome_unknown=True, error_code=error_code, error_message=error_message)
        if updated:
            send = model._default_manager.filter(pk=send_id).first()
            if send is not None:
                _run_completion(send)
    return bool(updated)


def reset_for_resend(kind: str, send_id: str) -> bool:
    """Operator re-send of an outcome-unknown row (D-07, `resend_unknown`): clear hand-off and claim."""
    model = model_for(kind)
    return bool(
        model._default_manager.filter(pk=send_id, status=S.QUEUED, outcome_unknown=True).update(
            outcome_unknown=False,
            handed_off_at=None,
            claimed_at=None,
            claim_token=None,
            error_code=None,
            error_message=None,
        )
    )
