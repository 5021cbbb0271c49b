"""The one lifecycle mechanism every state machine uses (spec D-04).

A lifecycle declares its graph with django-fsm-2 on the model (`FSMField(protected=True)` and `@transition`
methods whose bodies only apply a patch). Its pure reducer decides, for `(state, to, input, actor, at)`,
whether the move is allowed, which fields change and which effects follow. `Lifecycle.transition()` is the
runner: in one transaction it locks the row, applies the declared self-loop policy, calls the fsm transition,
saves, writes the audit row and applies the listed effects. It returns an `Outcome` and never raises for
business outcomes.

`Lifecycle.transition_many()` is the set-based runner for many rows (the same reducer per row): rows are grouped
by edge, each group is written with one `UPDATE … FROM unnest(…) WHERE state = <from> RETURNING` — a
compare-and-set, so a row another writer moved first is reported as `conflict` instead of overwritten — and
the effects of the rows that applied are applied in bulk (audit rows in one insert, named effects through the
lifecycle's batch handlers). A single-row `transition_many` is how a lifecycle declares a claim: the edge is in
the graph and its reducer decides the patch, and the runner applies it as a compare-and-set without a lock.
A reducer may add a `guard` (column values read from the row) that the compare-and-set requires as well.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from django.db import models, transaction
from django.utils import timezone

from owlat.ids import PrimaryKey, UUIDLike
from owlat.lifecycle.batch import SetBasedRunner
from owlat.lifecycle.types import Analytics, Audit, Call, Decision, Effect, Enqueue, Outcome

#: (model, field, from, to) -> the name of the fsm transition method declared for that edge (`_fsm_method`).
_FSM_METHOD_NAMES: dict[tuple[type, str, str, str], str] = {}


class Lifecycle(SetBasedRunner, ABC):
    """Base of every lifecycle module. Subclasses set the class attributes and implement `reduce`."""

    model: ClassVar[type[models.Model]]
    field: ClassVar[str] = "status"
    resource: ClassVar[str] = ""
    not_found_reason: ClassVar[str] = "not_found"
    messages: ClassVar[dict[str, str]] = {}
    #: "record": a self-loop is accepted as a no-op with an audit row; "reducer": the reducer decides.
    self_loop: ClassVar[Literal["record", "reducer"]] = "record"
    writes_audit: ClassVar[bool] = True
    #: False: the runner joins the caller's transaction without a savepoint (all-or-nothing with the caller).
    savepoint: ClassVar[bool] = True
    #: Reason of a row that another writer moved between the read and the compare-and-set (`transition_many`).
    conflict_reason: ClassVar[str] = "conflict"

    # -- to implement ---------------------------------------------------------------------------------
    @abstractmethod
    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        """The pure reducer: whether `frm → to` is allowed, the patch and the effects."""

    def self_loop_audit_action(self, state: str) -> str | None:
        return None

    def effect_handlers(self) -> dict[str, Callable[..., None]]:
        return {}

    def batch_effect_handlers(self) -> dict[str, Callable[[list[tuple[Any, dict[str, Any]]]], None]]:
        """Named effects applied once per batch by `transition_many`: `handler([(obj, kwargs), …])`. A name
        without a batch handler goes through `effect_handlers` row by row."""
        return {}

    # -- runner -----------------------------------------------------------------------------------------
    def message_for(self, reason: str | None) -> str | None:
        return self.messages.get(reason or "", reason)

    def transition(
        self,
        pk: PrimaryKey,
        to: str,
        *,
        actor: str,
        at: dt.datetime | None = None,
        input: dict[str, Any] | None = None,
        organization_id: UUIDLike | None = None,
    ) -> Outcome:
        at = at or timezone.now()
        input = input or {}
        with transaction.atomic(savepoint=self.savepoint):
            qs = self.model._default_manager.select_for_update()
            if organization_id is not None:
                qs = qs.filter(organization_id=organization_id)
            obj = qs.filter(pk=pk).first()
            if obj is None:
                return Outcome(
                    ok=False, reason=self.not_found_reason, message=self.message_for(self.not_found_reason)
                )
            return self._apply(obj, to, actor=actor, at=at, input=input)

    def transition_locked(
        self,
        obj: models.Model,
        to: str,
        *,
        actor: str,
        at: dt.datetime | None = None,
        input: dict | None = None,
    ) -> Outcome:
        """Run a transition on a row the caller has already locked inside its own transaction."""
        return self._apply(obj, to, actor=actor, at=at or timezone.now(), input=input or {})

    def _apply(
        self, obj: models.Model, to: str, *, actor: str, at: dt.datetime, input: dict[str, Any]
    ) -> Outcome:
        frm = getattr(obj, self.field)
        if frm == to and self.self_loop == "record":
            if self.writes_audit:
                action = self.self_loop_audit_action(frm)
                if action:
                    self._audit(
                        obj,
                        actor,
                        Audit(
                            action,
                            {"previousStatus": frm, "newStatus": to, "applied": "recorded", "no_op": True},
                        ),
                    )
            return Outcome(
                ok=True, applied="recorded", from_state=frm, to_state=to, object_id=obj.pk, obj=obj
            )

        decision = self.reduce(obj, frm, to, input=input, actor=actor, at=at)
        if not decision.ok or decision.applied == "duplicate":
            return self._unapplied(obj, frm, to, decision)

        patch = dict(decision.patch)
        new_state = patch.pop(self.field, frm)
        if new_state != frm:
            method = self._fsm_method(obj, frm, new_state)
            method(patch)
        else:
            for key, value in patch.items():
                setattr(obj, key, value)
        update_fields = {*patch.keys(), self.field}
        update_fields.update(f.name for f in obj._meta.concrete_fields if getattr(f, "auto_now", False))
        obj.save(update_fields=sorted(update_fields))

        for effect in decision.effects:
            self._apply_effect(obj, actor, effect)
        return self._applied(obj, frm, new_state, decision)

    def _fsm_method(self, obj: models.Model, frm: str, to: str) -> Callable[[dict], None]:
        """The declared fsm transition method of `obj` for `frm -> to` (bound to `obj`). The graph is declared on
        the model class, so the method's name is looked up once per (model, field, from, to) and remembered."""
        key = (type(obj), self.field, frm, to)
        name = _FSM_METHOD_NAMES.get(key)
        if name is None:
            getter = getattr(obj, f"get_all_{self.field}_transitions")
            for t in getter():
                if t.target == to and t.source in (frm, "*", "+"):
                    name = _FSM_METHOD_NAMES[key] = t.name
                    break
            else:
                raise LookupError(
                    f"{type(obj).__name__}: no fsm transition {frm} -> {to}; the reducer and graph disagree"
                )
        return getattr(obj, name)

    def _audit(self, obj: models.Model, actor: str, effect: Audit) -> None:
        self._audit_entry(obj, actor, effect).save(force_insert=True)

    def _apply_effect(self, obj: models.Model, actor: str, effect: Effect) -> None:
        if isinstance(effect, Audit):
            if self.writes_audit:
                self._audit(obj, actor, effect)
        elif isinstance(effect, Analytics):
            from owlat.analytics import capture

            capture(distinct_id=effect.distinct_id or actor, event=effect.event, properties=effect.properties)
        elif isinstance(effect, Enqueue):
            from owlat.jobs import enqueue

            enqueue(effect.func, *effect.args, at=effect.at, queue=effect.queue)
        elif isinstance(effect, Call):
            self.effect_handlers()[effect.name](obj, **effect.kwargs)
        else:  # pragma: no cover - a programming error
            raise TypeError(f"unknown effect {effect!r}")
