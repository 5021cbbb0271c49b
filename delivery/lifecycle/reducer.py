"""The pure reducer of the send lifecycle (DLV-06 … DLV-08, DLV-10 … DLV-12): the patch, the effects and
how an input applied, as a function of the row, the event and its input. No database access."""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

from delivery.lifecycle.refs import EVENTS
from delivery.models import BounceType
from delivery.models import SendStatus as S
from owlat.lifecycle import Call, Decision, Effect, legal_edges


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


def _not_legal(send: Any, frm: str) -> Decision:
    """Refuses a move the graph does not allow: `illegal_edge` from a state with edges, `terminal` otherwise."""
    # DLV-06: a hard-bounced row is terminal although `bounced` has (soft-only) edges in the graph.
    hard_bounced = frm == S.BOUNCED and send.bounce_type == BounceType.HARD
    return Decision.refuse("illegal_edge" if _has_edges(type(send), frm) and not hard_bounced else "terminal")


def _evidence(send: Any, frm: str, patch: dict[str, Any], fx: _Effects, at: dt.datetime) -> None:
    """DLV-08: the first delivery evidence on a row that left `queued` sets `delivered_at`."""
    if send.delivered_at is None and frm != S.QUEUED:
        patch["delivered_at"] = at
        fx.delivered(at)


def _to_sent(send: Any, frm: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    if frm == S.SENT:
        return Decision.accept({}, applied="duplicate")
    if frm != S.QUEUED:
        return _not_legal(send, frm)
    fx = _Effects(send, at)
    patch = {
        "status": S.SENT,
        "sent_at": at,
        "provider_message_id": input.get("provider_message_id") or send.provider_message_id,
        "provider_type": input.get("provider_type") or send.provider_type,
        "outcome_unknown": False,
    }
    fx.count(sent=1)
    fx.activity("email_sent", at, subject=getattr(send, "personalized_subject", None) or None)
    fx.webhook("email.sent", at)
    if send.send_kind == "transactional":
        fx.add("delete_attachments")
    fx.add("complete")
    return Decision.accept(patch, fx.build())


def _to_failed(send: Any, frm: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    if frm == S.FAILED:
        return Decision.accept({}, applied="duplicate")
    if frm not in (S.QUEUED, S.SENT):
        return _not_legal(send, frm)
    fx = _Effects(send, at)
    patch = {
        "status": S.FAILED,
        "failed_at": at,
        "error_message": input.get("error_message"),
        "error_code": input.get("error_code"),
        "outcome_unknown": False,
    }
    fx.count(failed=1)
    if frm == S.SENT and send.send_kind == "campaign":
        # a row counts once: a failure reported after the send moves it from `sent` to `failed`
        fx.counters["sent"] = fx.counters.get("sent", 0) - 1
    if send.send_kind == "transactional":
        fx.add("delete_attachments")
    if frm == S.QUEUED:
        fx.add("complete")
    return Decision.accept(patch, fx.build())


def _to_delivered(send: Any, frm: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    fx = _Effects(send, at)
    if frm == S.SENT:
        patch = {"status": S.DELIVERED, "delivered_at": send.delivered_at or at}
        if send.delivered_at is None:
            fx.delivered(at)
        return Decision.accept(patch, fx.build())
    if frm in (S.FAILED, S.BOUNCED):
        # DLV-08: still attributed when not after the failure / bounce; otherwise not a legal move.
        limit = send.failed_at if frm == S.FAILED else send.bounced_at
        if send.delivered_at is None and limit is not None and at <= limit:
            fx.delivered(at)
            return Decision.accept({"delivered_at": at}, fx.build(), applied="recorded")
        if send.delivered_at is not None:
            return Decision.accept({}, applied="duplicate")
        return _not_legal(send, frm)
    # delivered, opened, clicked, complained: a late acceptance never moves an advanced row backwards.
    if send.delivered_at is None:
        fx.delivered(at)
        return Decision.accept({"delivered_at": at}, fx.build(), applied="recorded")
    return Decision.accept({}, applied="duplicate")


def _to_opened(send: Any, frm: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    fx = _Effects(send, at)
    patch: dict[str, Any] = {"open_count": (send.open_count or 0) + 1}
    applied = "recorded"
    if send.opened_at is None:
        patch["opened_at"] = at
        if frm in (S.SENT, S.DELIVERED):
            patch["status"] = S.OPENED
            applied = "transitioned"
        fx.count(opened=1)
        fx.activity("email_opened", at)
        fx.webhook("email.opened", at)
    _evidence(send, frm, patch, fx, at)
    return Decision.accept(patch, fx.build(), applied=applied)


def _to_clicked(send: Any, frm: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    fx = _Effects(send, at)
    url = str(input.get("url") or "")
    patch: dict[str, Any] = {
        "clicked_links": [*(send.clicked_links or []), {"url": url, "clickedAt": _iso(at)}]
    }
    applied = "recorded"
    if send.clicked_at is None:
        patch["clicked_at"] = at
        if frm in (S.SENT, S.DELIVERED, S.OPENED):
            patch["status"] = S.CLICKED
            applied = "transitioned"
        fx.count(clicked=1)
        fx.activity("email_clicked", at, url=url)
    fx.webhook("email.clicked", at, url=url)
    _evidence(send, frm, patch, fx, at)
    return Decision.accept(patch, fx.build(), applied=applied)


def _to_bounced(send: Any, frm: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    bounce_type = input.get("bounce_type")
    if bounce_type not in (BounceType.HARD, BounceType.SOFT):
        bounce_type = BounceType.HARD
    if frm == S.COMPLAINED:
        return _not_legal(send, frm)
    message = input.get("bounce_message")
    fx = _Effects(send, at)
    patch = {"status": S.BOUNCED, "bounced_at": at, "bounce_type": bounce_type, "error_message": message}
    if frm == S.BOUNCED:
        if send.bounce_type == BounceType.HARD or bounce_type == BounceType.SOFT:
            return Decision.accept({}, applied="duplicate")
        # soft → hard hardening (DLV-07, DLV-10): soft −1, hard +1, bounced unchanged.
        fx.count(soft_bounced=-1, hard_bounced=1)
        fx.add("suppress", reason="bounced", bounce_type=BounceType.HARD)
    elif bounce_type == BounceType.HARD:
        fx.count(bounced=1, hard_bounced=1)
        fx.add("suppress", reason="bounced", bounce_type=BounceType.HARD)
    else:
        fx.count(bounced=1, soft_bounced=1)
        if input.get("counts_toward_suppression", True):  # a block says nothing about the address
            fx.add("soft_bounce")
    fx.activity("email_bounced", at, bounceType=bounce_type, message=message)
    fx.webhook("email.bounced", at, bounceType=bounce_type, message=message)
    return Decision.accept(patch, fx.build())


def _to_complained(send: Any, frm: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    if frm == S.COMPLAINED:
        return Decision.accept({}, applied="duplicate")
    if frm == S.BOUNCED and send.bounce_type == BounceType.HARD:
        return _not_legal(send, frm)
    fx = _Effects(send, at)
    patch: dict[str, Any] = {"status": S.COMPLAINED, "complained_at": at}
    fx.stat(complained=1)
    fx.activity("email_complained", at)
    fx.webhook("email.complained", at)
    fx.add("suppress", reason="complained", bounce_type=None)
    fx.add("complained")
    _evidence(send, frm, patch, fx, at)
    return Decision.accept(patch, fx.build())


_REDUCERS = {
    S.SENT: _to_sent,
    S.FAILED: _to_failed,
    S.DELIVERED: _to_delivered,
    S.OPENED: _to_opened,
    S.CLICKED: _to_clicked,
    S.BOUNCED: _to_bounced,
    S.COMPLAINED: _to_complained,
}


def reduce_send(send: Any, frm: str, to: str, *, input: dict[str, Any], at: dt.datetime) -> Decision:
    """DLV-06 … DLV-08, DLV-10 … DLV-12 as a pure function of the row, the event and its input.

    `sent` and `failed` are the only moves out of `queued`; a `failed` row takes nothing but late delivery
    evidence; every other event is reduced by its own function in `_REDUCERS`."""
    if to not in EVENTS:
        return Decision.refuse("invalid_for_kind")
    if to not in (S.SENT, S.FAILED):
        if frm == S.QUEUED:
            return Decision.refuse("illegal_edge")
        if frm == S.FAILED and to != S.DELIVERED:
            return _not_legal(send, frm)
    return _REDUCERS[to](send, frm, input, at)
