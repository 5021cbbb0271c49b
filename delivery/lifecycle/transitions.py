"""The send lifecycles on the kernel runner and their entry points (DLV-05): `send_transition`, the
provider-message-id lookups used by webhooks, and the dispatch worker's batched `send_transition_many`."""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from delivery.lifecycle.effects import BATCH_EFFECT_HANDLERS, EFFECT_HANDLERS
from delivery.lifecycle.reducer import reduce_send
from delivery.lifecycle.refs import ACTOR, SendRef, model_for
from delivery.models import EmailSend, TransactionalSend
from delivery.models import SendStatus as S
from owlat.lifecycle import Decision, Lifecycle, Move, Outcome


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
        return dict(BATCH_EFFECT_HANDLERS)

    def _fsm_method(self, obj: Any, frm: str, to: str) -> Callable[[dict], None]:
        """The graph's transition method, looked up once per (table, edge): the kernel walks every declared
        transition per call, twice per row of a batch."""
        key = (type(obj), frm, to)
        name = _FSM_METHODS.get(key)
        if name is None:
            method = super()._fsm_method(obj, frm, to)
            _FSM_METHODS[key] = method.__name__
            return method
        return getattr(obj, name)

    def effect_handlers(self) -> dict[str, Callable[..., None]]:
        return dict(EFFECT_HANDLERS)


_FSM_METHODS: dict[tuple[type, str, str], str] = {}


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
    """One dispatch result to record (DLV-18). `obj` is the row as its caller loaded it under its own claim
    (the dispatch worker), used without reading it again; None → the row is read under lock."""

    ref: SendRef
    to: str  # sent | failed
    input: dict[str, Any] = field(default_factory=dict)
    obj: Any = None


def send_transition_many(items: Iterable[Completion]) -> list[Outcome]:
    """The batched variant used by the dispatch worker: the same reducer, graph and effects as
    `send_transition`, for many rows in one transaction on the kernel's set-based runner
    (`Lifecycle.transition_many`, D-04) — written back with one `UPDATE … RETURNING` per table and edge, plain
    timeline activities inserted in one statement, counter and sending-stat increments merged, webhook
    endpoints looked up once per organization, and completion handlers called once per campaign (or per
    non-campaign row) after the rows are written.

    A completion that carries its row (`obj`, loaded by the worker that holds the row's claim) is reduced
    from that row without reading it again: the write is a compare-and-set on the status it was loaded in,
    so a row another writer moved meanwhile loses it (`conflict`) and is then read under lock and reduced
    again like a completion without a row (one query per table, ordered by id)."""
    items = list(items)
    if not items:
        return []
    runner = _LIFECYCLES["campaign"]  # both send tables share one graph, reducer and effects
    outcomes: list[Outcome | None] = [None] * len(items)
    with transaction.atomic():
        given = [
            i
            for i, item in enumerate(items)
            if item.obj is not None and not (item.to in _EVIDENCE and item.obj.outcome_unknown)
        ]
        if given:
            moves = [Move(items[i].obj, items[i].to, items[i].input) for i in given]
            for i, outcome in zip(given, runner.transition_many(moves, actor=ACTOR), strict=True):
                if not (outcome.reason == runner.conflict_reason and not outcome.ok):
                    outcomes[i] = outcome
        rest = [i for i, outcome in enumerate(outcomes) if outcome is None]
        for i, outcome in zip(rest, _transition_locked_many([items[i] for i in rest]), strict=True):
            outcomes[i] = outcome
    return [o for o in outcomes if o is not None]


def _transition_locked_many(items: list[Completion]) -> list[Outcome]:
    """`send_transition_many` for rows read again under `SELECT … FOR UPDATE` (in the caller's transaction)."""
    if not items:
        return []
    outcomes: list[Outcome | None] = [None] * len(items)
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
        if (item.ref.kind, str(item.ref.id)) in rows:
            found.append(i)
        else:
            outcomes[i] = Outcome(ok=False, reason="send_not_found", message="Send not found")
    # D-07: provider evidence on an outcome-unknown row first records the acceptance at hand-off.
    evidence = []
    for i in found:
        item = items[i]
        obj = rows[(item.ref.kind, str(item.ref.id))]
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
    runner = _LIFECYCLES["campaign"]
    runner.transition_many(evidence, actor=ACTOR)
    moves = [
        Move(rows[(items[i].ref.kind, str(items[i].ref.id))], items[i].to, items[i].input) for i in found
    ]
    for i, outcome in zip(found, runner.transition_many(moves, actor=ACTOR), strict=True):
        outcomes[i] = outcome
    return [o for o in outcomes if o is not None]
