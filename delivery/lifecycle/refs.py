"""Send references, the send-lifecycle constants and the handler registries that higher layers fill in
their `AppConfig.ready()` (style.md, Layering)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from delivery.models import EmailSend, TransactionalSend
from delivery.models import SendStatus as S

RefKind = Literal["campaign", "transactional"]
EVENTS = (S.SENT, S.FAILED, S.DELIVERED, S.OPENED, S.CLICKED, S.BOUNCED, S.COMPLAINED)
SOFT_BOUNCE_SUPPRESSION_THRESHOLD = 5
UNKNOWN_OUTCOME_DEADLINE = dt.timedelta(hours=24)  # D-07
ACTOR = "system:delivery"
#: Set on a send row by a loader that read, in its own statement, whether the row's organization has an active
#: webhook endpoint (`delivery.rounds.load_rows`); the webhook effect then needs no query of its own.
WEBHOOK_ENDPOINTS_ATTR = "org_has_webhook_endpoints"


def claim_lease() -> dt.timedelta:
    """D-07 as refined: a claim lives while the job holding it renews it (every
    `SEND_CLAIM_RENEW_SECONDS`, `claims.ClaimKeeper`); one not renewed for `SEND_CLAIM_LEASE_SECONDS` belongs
    to a dead job, so its rows may be claimed again (never handed off) or are outcome-unknown (handed off)."""
    from django.conf import settings

    return dt.timedelta(seconds=settings.SEND_CLAIM_LEASE_SECONDS)


def orphan_after(kind: str) -> dt.timedelta:
    """How long a never-claimed `queued` row waits before the reaper hands it to its pool again: transactional
    rows after `SEND_ORPHAN_AFTER_SECONDS` (their job was lost with a worker); campaign rows after 5 minutes
    (their jobs may be delayed on purpose, CMP-34, and the campaign walk re-drives itself)."""
    from django.conf import settings

    if kind == "transactional":
        return dt.timedelta(seconds=settings.SEND_ORPHAN_AFTER_SECONDS)
    return dt.timedelta(minutes=5)


def redrive_lease(kind: str) -> dt.timedelta:
    """How long a row the orphan sweep handed to its pool again is left to that job before the sweep may hand it
    out once more: `SEND_REDRIVE_LEASE_SECONDS`, and never less than `orphan_after(kind)` (what a freshly
    enqueued row is given). While a queue is stuck nothing claims the row, so without the lease every sweep
    (every `QUEUE_SWEEP_SECONDS`) would add another job for it."""
    from django.conf import settings

    return max(orphan_after(kind), dt.timedelta(seconds=settings.SEND_REDRIVE_LEASE_SECONDS))


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


#: `fn(campaign_ids)` → the ids among them whose rows the pool must not hand out now (paused or cancelled
#: campaigns); the campaigns app registers it, the pool asks it every round (`delivery.worker`).
HoldCheck = Callable[[set[str]], set[str]]
_hold_checks: list[HoldCheck] = []


def register_campaign_hold(fn: HoldCheck) -> HoldCheck:
    if fn not in _hold_checks:
        _hold_checks.append(fn)
    return fn


def campaigns_on_hold(campaign_ids: set[str]) -> set[str]:
    """The campaigns among `campaign_ids` whose rows must stay where they are (no registered check: none)."""
    held: set[str] = set()
    for fn in _hold_checks:
        held |= fn(set(campaign_ids))
    return held


def completion_handlers(kind: str) -> tuple[CompletionHandler, ...]:
    return tuple(_completion_handlers.get(kind, ()))


def complaint_handlers(kind: str) -> tuple[ComplaintHandler, ...]:
    return tuple(_complaint_handlers.get(kind, ()))
