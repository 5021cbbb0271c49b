"""The one lifecycle mechanism every state machine uses (spec D-04).

A lifecycle declares its graph with django-fsm-2 on the model (`FSMField(protected=True)` and `@transition`
methods whose bodies only apply a patch). Its pure reducer decides, for `(state, to, input, actor, at)`,
whether the move is allowed, which fields change and which effects follow. `Lifecycle.transition()` is the
runner: in one transaction it locks the row, applies the declared self-loop policy, calls the fsm transition,
saves, writes the audit row and applies the listed effects. It returns an `Outcome` and never raises for
business outcomes.

`Lifecycle.transition_many()` is the set-based runner for many rows (the same reducer per row): rows are grouped
by edge, each group is written with one `UPDATE … FROM (VALUES …) WHERE state = <from> RETURNING` — a
compare-and-set, so a row another writer moved first is reported as `conflict` instead of overwritten — and
the effects of the rows that applied are applied in bulk (audit rows in one insert, named effects through the
lifecycle's batch handlers). A single-row `transition_many` is how a lifecycle declares a claim: the edge is in
the graph and its reducer decides the patch, and the runner applies it as a compare-and-set without a lock.
A reducer may add a `guard` (column values read from the row) that the compare-and-set requires as well.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from django.db import connection, models, transaction
from django.utils import timezone

Applied = Literal["transitioned", "recorded", "duplicate"]


# --- Effects: plain data, applied by the runner ---------------------------------------------------------


@dataclass(frozen=True)
class Audit:
    action: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Analytics:
    event: str
    properties: dict[str, Any] = field(default_factory=dict)
    distinct_id: str | None = None  # defaults to the actor


@dataclass(frozen=True)
class Enqueue:
    func: str
    args: tuple = ()
    at: dt.datetime | None = None
    queue: str | None = None


@dataclass(frozen=True)
class Call:
    """A named effect handled by the lifecycle's `effect_handlers` in the same transaction."""

    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)


Effect = Audit | Analytics | Enqueue | Call


@dataclass(frozen=True)
class Decision:
    """What a pure reducer returns."""

    ok: bool
    reason: str | None = None
    applied: Applied | None = None
    patch: dict[str, Any] = field(default_factory=dict)
    effects: tuple[Effect, ...] = ()
    #: Column values (read from the row) that the set-based runner's compare-and-set requires besides the
    #: state; the locking runner ignores it (the row is locked while the reducer reads it).
    guard: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def refuse(cls, reason: str) -> Decision:
        return cls(ok=False, reason=reason)

    @classmethod
    def accept(
        cls,
        patch: dict[str, Any],
        effects: Iterable[Effect] = (),
        applied: Applied = "transitioned",
        guard: dict[str, Any] | None = None,
    ) -> Decision:
        return cls(
            ok=True, applied=applied, patch=dict(patch), effects=tuple(effects), guard=dict(guard or {})
        )


@dataclass(frozen=True)
class Move:
    """One row's transition in a set-based batch (`Lifecycle.transition_many`): the row as loaded (the reducer
    reads it; the compare-and-set checks that its state is still the one read), the target, the input."""

    obj: Any
    to: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    applied: Applied | None = None
    reason: str | None = None
    message: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    object_id: Any = None
    obj: Any = field(default=None, repr=False, compare=False)

    def as_transition(self) -> dict[str, Any]:
        """The API's `transition` object (API-24)."""
        return {"applied": self.applied, "from": self.from_state, "to": self.to_state}


def legal_edges(model: type[models.Model], field_name: str = "status") -> frozenset[tuple[str, str]]:
    """The graph declared with django-fsm on `model.field_name`, as a set of (source, target) pairs."""
    fsm_field = model._meta.get_field(field_name)
    edges: set[tuple[str, str]] = set()
    for t in fsm_field.get_all_transitions(model):
        if t.target is not None:
            edges.add((t.source, t.target))
    return frozenset(edges)


class Lifecycle(ABC):
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
        pk: Any,
        to: str,
        *,
        actor: str,
        at: dt.datetime | None = None,
        input: dict[str, Any] | None = None,
        organization_id: Any = None,
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
        if not decision.ok:
            return Outcome(
                ok=False,
                reason=decision.reason,
                message=self.message_for(decision.reason),
                from_state=frm,
                to_state=to,
                object_id=obj.pk,
                obj=obj,
            )
        if decision.applied == "duplicate":
            return Outcome(
                ok=True, applied="duplicate", from_state=frm, to_state=frm, object_id=obj.pk, obj=obj
            )

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
        return Outcome(
            ok=True,
            applied=decision.applied or "transitioned",
            from_state=frm,
            to_state=new_state,
            object_id=obj.pk,
            obj=obj,
        )

    def _fsm_method(self, obj: models.Model, frm: str, to: str) -> Callable[[dict], None]:
        getter = getattr(obj, f"get_all_{self.field}_transitions")
        for t in getter():
            if t.target == to and t.source in (frm, "*", "+"):
                return getattr(obj, t.name)
        raise LookupError(
            f"{type(obj).__name__}: no fsm transition {frm} -> {to}; the reducer and graph disagree"
        )

    def _audit(self, obj: models.Model, actor: str, effect: Audit) -> None:
        from owlat.audit import audit_write

        audit_write(
            organization_id=obj.organization_id,
            actor=actor,
            action=effect.action,
            resource=self.resource,
            resource_id=str(obj.pk),
            details=effect.details,
        )

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

    # -- set-based runner ---------------------------------------------------------------------------------
    def transition_many(
        self,
        moves: Iterable[Move],
        *,
        actor: str,
        at: dt.datetime | None = None,
        lock: bool = False,
    ) -> list[Outcome]:
        """Run the reducer for every row and write the applied ones set-based, in one transaction.

        Rows are grouped by edge (model, from-state, to-state, patched columns, guarded columns); each group is one
        `UPDATE … RETURNING` that only touches rows still in the from-state (and matching the reducer's
        guard). A row that was not returned lost a race: its outcome is `conflict` and its effects are not
        applied. The effects of the applied rows follow in bulk: audit rows in one insert, named effects
        through `batch_effect_handlers` (else row by row), analytics and enqueues row by row.
        With `lock=True` the rows are re-read under `SELECT … FOR UPDATE` first (ordered by pk), so no row
        can conflict; without it the caller's rows are used as loaded (a claim needs no lock, and a caller that
        locked its rows itself passes them). Without `lock`, the rows may belong to several models that share
        this lifecycle's graph and reducer (delivery's two send tables).
        Outcomes are returned in the order of `moves`. A row named twice is moved in two rounds (the second
        reduces from the state the first left), never written twice by one statement.
        """
        moves = list(moves)
        if not moves:
            return []
        seen: set[Any] = set()
        first: list[int] = []
        later: list[int] = []
        for i, m in enumerate(moves):
            (later if m.obj.pk in seen else first).append(i)
            seen.add(m.obj.pk)
        if later:
            outcomes_by_index: dict[int, Outcome] = {}
            with transaction.atomic(savepoint=self.savepoint):
                for group in (first, later):
                    done = self.transition_many([moves[i] for i in group], actor=actor, at=at, lock=lock)
                    outcomes_by_index.update(zip(group, done, strict=True))
            return [outcomes_by_index[i] for i in range(len(moves))]
        at = at or timezone.now()
        outcomes: list[Outcome | None] = [None] * len(moves)
        with transaction.atomic(savepoint=self.savepoint):
            if lock:
                fresh = {
                    obj.pk: obj
                    for obj in self.model._default_manager.select_for_update()
                    .filter(pk__in=[m.obj.pk for m in moves])
                    .order_by("pk")
                }
                for i, m in enumerate(moves):
                    if m.obj.pk in fresh:
                        moves[i] = Move(fresh[m.obj.pk], m.to, m.input)
                    else:
                        outcomes[i] = Outcome(
                            ok=False,
                            reason=self.not_found_reason,
                            message=self.message_for(self.not_found_reason),
                            object_id=m.obj.pk,
                        )
            groups: dict[tuple, list[tuple[int, Any, Decision, dict[str, Any]]]] = defaultdict(list)
            audits: list[tuple[Any, Audit]] = []
            auto_now: dict[type, list[str]] = {}
            stamp = timezone.now()
            for i, m in enumerate(moves):
                if outcomes[i] is not None:
                    continue
                obj = m.obj
                frm = getattr(obj, self.field)
                if frm == m.to and self.self_loop == "record":
                    action = self.self_loop_audit_action(frm) if self.writes_audit else None
                    if action:
                        details = {
                            "previousStatus": frm,
                            "newStatus": frm,
                            "applied": "recorded",
                            "no_op": True,
                        }
                        audits.append((obj, Audit(action, details)))
                    outcomes[i] = Outcome(
                        ok=True, applied="recorded", from_state=frm, to_state=frm, object_id=obj.pk, obj=obj
                    )
                    continue
                decision = self.reduce(obj, frm, m.to, input=m.input, actor=actor, at=at)
                if not decision.ok or decision.applied == "duplicate":
                    outcomes[i] = self._unapplied(obj, frm, m.to, decision)
                    continue
                patch = dict(decision.patch)
                new_state = patch.pop(self.field, frm)
                if new_state != frm:
                    self._fsm_method(obj, frm, new_state)  # the reducer and the declared graph must agree
                model = type(obj)
                if model not in auto_now:
                    auto_now[model] = [
                        f.name for f in model._meta.concrete_fields if getattr(f, "auto_now", False)
                    ]
                for name in auto_now[model]:
                    patch.setdefault(name, stamp)
                key = (model, frm, new_state, tuple(sorted(patch)), tuple(sorted(decision.guard)))
                groups[key].append((i, obj, decision, patch))

            applied: list[tuple[Any, Decision]] = []
            for (model, frm, new_state, fields, guarded), rows in groups.items():
                won = self._compare_and_set(model, frm, new_state, fields, guarded, rows)
                for i, obj, decision, patch in rows:
                    if obj.pk not in won:
                        outcomes[i] = Outcome(
                            ok=False,
                            reason=self.conflict_reason,
                            message=self.message_for(self.conflict_reason),
                            from_state=frm,
                            to_state=moves[i].to,
                            object_id=obj.pk,
                            obj=obj,
                        )
                        continue
                    if new_state != frm:
                        self._fsm_method(obj, frm, new_state)(patch)
                    else:
                        for name, value in patch.items():
                            setattr(obj, name, value)
                    applied.append((obj, decision))
                    outcomes[i] = Outcome(
                        ok=True,
                        applied=decision.applied or "transitioned",
                        from_state=frm,
                        to_state=new_state,
                        object_id=obj.pk,
                        obj=obj,
                    )
            self._apply_effects_many(applied, audits, actor)
        return [o for o in outcomes if o is not None]

    def create_many(self, moves: Iterable[Move], *, actor: str, at: dt.datetime | None = None) -> list[Any]:
        """Insert new rows that arrive in their state through a declared edge (e.g. a step run created
        `skipped`): each unsaved row holds its initial state, the reducer decides the move, the fsm transition
        applies the patch in memory, the rows are inserted with one `bulk_create` and the effects are applied
        in bulk. Creation has no business outcome: a refused move is a programming error (ValueError)."""
        moves = list(moves)
        if not moves:
            return []
        at = at or timezone.now()
        applied: list[tuple[Any, Decision]] = []
        with transaction.atomic(savepoint=self.savepoint):
            for m in moves:
                frm = getattr(m.obj, self.field)
                decision = self.reduce(m.obj, frm, m.to, input=m.input, actor=actor, at=at)
                if not decision.ok or decision.applied == "duplicate":
                    raise ValueError(
                        f"{self.model.__name__}: cannot create through {frm} -> {m.to}: {decision}"
                    )
                patch = dict(decision.patch)
                new_state = patch.pop(self.field, frm)
                if new_state != frm:
                    self._fsm_method(m.obj, frm, new_state)(patch)
                else:
                    for name, value in patch.items():
                        setattr(m.obj, name, value)
                applied.append((m.obj, decision))
            self.model._default_manager.bulk_create([obj for obj, _ in applied])
            self._apply_effects_many(applied, [], actor)
        return [obj for obj, _ in applied]

    def _unapplied(self, obj: Any, frm: str, to: str, decision: Decision) -> Outcome:
        if decision.ok:  # duplicate
            return Outcome(
                ok=True, applied="duplicate", from_state=frm, to_state=frm, object_id=obj.pk, obj=obj
            )
        return Outcome(
            ok=False,
            reason=decision.reason,
            message=self.message_for(decision.reason),
            from_state=frm,
            to_state=to,
            object_id=obj.pk,
            obj=obj,
        )

    def _compare_and_set(
        self,
        model: type[models.Model],
        frm: str,
        to: str,
        fields: tuple[str, ...],
        guarded: tuple[str, ...],
        rows: list[tuple[int, Any, Decision, dict[str, Any]]],
    ) -> set[Any]:
        """Write one edge's rows: `UPDATE … SET state = to, <patch> WHERE pk = … AND state = frm AND <guard>`;
        returns the pks of the rows written. PostgreSQL: one statement per 500 rows, `FROM (VALUES …)` with
        typed columns and `RETURNING`; elsewhere (SQLite, whose writers are serialized) one conditional
        UPDATE per row."""
        manager = model._default_manager
        if connection.vendor != "postgresql":
            won: set[Any] = set()
            for _, obj, decision, patch in rows:
                if manager.filter(pk=obj.pk, **{self.field: frm}, **decision.guard).update(
                    **{self.field: to}, **patch
                ):
                    won.add(obj.pk)
            return won
        meta = model._meta
        qn = connection.ops.quote_name
        table = qn(meta.db_table)
        pk = meta.pk
        state = meta.get_field(self.field)
        patched = [meta.get_field(name) for name in fields]
        guards = [meta.get_field(name) for name in guarded]
        columns = [qn("pk_")] + [qn(f"p_{f.column}") for f in patched] + [qn(f"g_{f.column}") for f in guards]
        row_sql = "(" + ", ".join(f"%s::{f.cast_db_type(connection)}" for f in [pk, *patched, *guards]) + ")"
        assignments = ", ".join(
            [f"{qn(state.column)} = %s"] + [f"{qn(f.column)} = v.{qn(f'p_{f.column}')}" for f in patched]
        )
        conditions = " AND ".join(
            [f"{table}.{qn(pk.column)} = v.{qn('pk_')}", f"{table}.{qn(state.column)} = %s"]
            + [f"{table}.{qn(f.column)} IS NOT DISTINCT FROM v.{qn(f'g_{f.column}')}" for f in guards]
        )
        won = set()
        for start in range(0, len(rows), 500):
            chunk = rows[start : start + 500]
            params: list[Any] = [state.get_db_prep_save(to, connection)]
            for _, obj, decision, patch in chunk:
                params.append(pk.get_db_prep_value(obj.pk, connection))
                params.extend(f.get_db_prep_save(patch[f.name], connection) for f in patched)
                params.extend(f.get_db_prep_save(decision.guard[f.name], connection) for f in guards)
            params.append(state.get_db_prep_save(frm, connection))
            sql = (
                f"UPDATE {table} SET {assignments} FROM (VALUES {', '.join([row_sql] * len(chunk))}) "
                f"AS v({', '.join(columns)}) WHERE {conditions} RETURNING {table}.{qn(pk.column)}"
            )
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                won.update(pk.to_python(row[0]) for row in cursor.fetchall())
        return won

    def _apply_effects_many(
        self, applied: list[tuple[Any, Decision]], audits: list[tuple[Any, Audit]], actor: str
    ) -> None:
        calls: dict[str, list[tuple[Any, dict[str, Any]]]] = defaultdict(list)
        for obj, decision in applied:
            for effect in decision.effects:
                if isinstance(effect, Audit):
                    if self.writes_audit:
                        audits.append((obj, effect))
                elif isinstance(effect, Call):
                    calls[effect.name].append((obj, effect.kwargs))
                else:
                    self._apply_effect(obj, actor, effect)
        if audits:
            from owlat.audit import audit_entry
            from owlat.models import AuditLog

            AuditLog.objects.bulk_create(
                [
                    audit_entry(
                        organization_id=obj.organization_id,
                        actor=actor,
                        action=effect.action,
                        resource=self.resource,
                        resource_id=str(obj.pk),
                        details=effect.details,
                    )
                    for obj, effect in audits
                ],
                batch_size=500,
            )
        batch_handlers = self.batch_effect_handlers()
        handlers = self.effect_handlers()
        for name, items in calls.items():
            if name in batch_handlers:
                batch_handlers[name](items)
            else:
                for obj, kwargs in items:
                    handlers[name](obj, **kwargs)
