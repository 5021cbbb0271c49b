"""The set-based runner (`Lifecycle.transition_many`, `Lifecycle.create_many`), mixed into `Lifecycle`."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from django.db import connection, models, transaction
from django.utils import timezone

from owlat.ids import PrimaryKey
from owlat.lifecycle.types import Audit, Call, Decision, Move, Outcome
from owlat.sql import compare_and_set_run, compare_and_set_statement

#: one accepted move: its index in `moves`, the row, the reducer's decision and the columns to write
_PlannedRow = tuple[int, Any, Decision, dict[str, Any]]


def _rounds(moves: list[Move]) -> tuple[list[int], list[int]]:
    """The indices of each row's first move, and of the moves naming a row again (moved in a second round)."""
    seen: set[PrimaryKey] = set()
    first: list[int] = []
    later: list[int] = []
    for i, m in enumerate(moves):
        (later if m.obj.pk in seen else first).append(i)
        seen.add(m.obj.pk)
    return first, later


class SetBasedRunner:
    """Mixin of `Lifecycle`: the reducer per row, one compare-and-set `UPDATE … RETURNING` per edge, effects in
    bulk. Uses the lifecycle's attributes and `reduce`, `_fsm_method`, `_apply_effect`."""

    if TYPE_CHECKING:  # what the mixin uses of `Lifecycle` (owlat/lifecycle/runner.py declares them)
        model: ClassVar[type[models.Model]]
        field: ClassVar[str]
        resource: ClassVar[str]
        not_found_reason: ClassVar[str]
        conflict_reason: ClassVar[str]
        self_loop: ClassVar[str]
        writes_audit: ClassVar[bool]
        savepoint: ClassVar[bool]
        reduce: Callable[..., Decision]
        self_loop_audit_action: Callable[[str], str | None]
        effect_handlers: Callable[[], dict[str, Callable[..., None]]]
        batch_effect_handlers: Callable[[], dict[str, Callable[[list[tuple[Any, dict[str, Any]]]], None]]]
        message_for: Callable[[str | None], str | None]
        _fsm_method: Callable[..., Any]
        _apply_effect: Callable[..., None]

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
        first, later = _rounds(moves)
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
                self._lock_moves(moves, outcomes)
            audits: list[tuple[Any, Audit]] = []
            groups = self._plan_moves(moves, outcomes, audits, actor=actor, at=at)
            applied = self._write_groups(groups, moves, outcomes)
            self._apply_effects_many(applied, audits, actor)
        return [o for o in outcomes if o is not None]

    def _lock_moves(self, moves: list[Move], outcomes: list[Outcome | None]) -> None:
        """Re-read the rows under `SELECT … FOR UPDATE` (ordered by pk); a row that is gone is `not_found`."""
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

    def _plan_moves(
        self,
        moves: list[Move],
        outcomes: list[Outcome | None],
        audits: list[tuple[Any, Audit]],
        *,
        actor: str,
        at: dt.datetime,
    ) -> dict[tuple[Any, ...], list[_PlannedRow]]:
        """Reduce every move still without an outcome; the accepted ones grouped by edge and patched columns
        (recorded self-loops and refusals get their outcome here)."""
        groups: dict[tuple[Any, ...], list[_PlannedRow]] = defaultdict(list)
        auto_now: dict[type, list[str]] = {}
        stamp = timezone.now()
        for i, m in enumerate(moves):
            if outcomes[i] is not None:
                continue
            obj = m.obj
            frm = getattr(obj, self.field)
            if frm == m.to and self.self_loop == "record":
                outcomes[i] = self._record_self_loop(obj, frm, audits)
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
        return groups

    def _record_self_loop(self, obj: Any, frm: str, audits: list[tuple[Any, Audit]]) -> Outcome:
        """A self-loop of a lifecycle that records them: an audit row (when it has an action), no write."""
        action = self.self_loop_audit_action(frm) if self.writes_audit else None
        if action:
            details = {"previousStatus": frm, "newStatus": frm, "applied": "recorded", "no_op": True}
            audits.append((obj, Audit(action, details)))
        return Outcome(ok=True, applied="recorded", from_state=frm, to_state=frm, object_id=obj.pk, obj=obj)

    def _write_groups(
        self,
        groups: dict[tuple[Any, ...], list[_PlannedRow]],
        moves: list[Move],
        outcomes: list[Outcome | None],
    ) -> list[tuple[Any, Decision]]:
        """One compare-and-set per group; a row it did not return lost a race (`conflict`). Returns the rows
        that moved, with their decisions, their instances patched."""
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
                outcomes[i] = self._applied(obj, frm, new_state, decision)
        return applied

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

    def _audit_entry(self, obj: Any, actor: str, effect: Audit) -> Any:
        """The unsaved `AuditLog` row of an `Audit` effect on `obj` (this lifecycle's resource)."""
        from owlat.audit import audit_entry

        return audit_entry(
            organization_id=obj.organization_id,
            actor=actor,
            action=effect.action,
            resource=self.resource,
            resource_id=str(obj.pk),
            details=effect.details,
        )

    def _applied(self, obj: Any, frm: str, new_state: str, decision: Decision) -> Outcome:
        """The outcome of a transition written to `obj` (moved to `new_state`, or the reducer's own `applied`)."""
        return Outcome(
            ok=True,
            applied=decision.applied or "transitioned",
            from_state=frm,
            to_state=new_state,
            object_id=obj.pk,
            obj=obj,
        )

    def _unapplied(self, obj: Any, frm: str, to: str, decision: Decision) -> Outcome:
        """The outcome of a reduced transition that writes nothing: a duplicate, or the reducer's refusal."""
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
        rows: list[_PlannedRow],
    ) -> set[PrimaryKey]:
        """Write one edge's rows: `UPDATE … SET state = to, <patch> WHERE pk = … AND state = frm AND <guard>`;
        returns the pks of the rows written. PostgreSQL: one statement per 500 rows, `FROM unnest(<one array
        per column>)` and `RETURNING`, a text fixed per edge whatever the number of rows, run prepared
        (`owlat.sql.compare_and_set_statement`: parsed and planned once per connection); elsewhere (SQLite, whose writers
        are serialized) one conditional UPDATE per row."""
        manager = model._default_manager
        if connection.vendor != "postgresql":
            won: set[PrimaryKey] = set()
            for _, obj, decision, patch in rows:
                if manager.filter(pk=obj.pk, **{self.field: frm}, **decision.guard).update(
                    **{self.field: to}, **patch
                ):
                    won.add(obj.pk)
            return won
        meta = model._meta
        pk = meta.pk
        state: Any = meta.get_field(self.field)
        patched: list[Any] = [meta.get_field(name) for name in fields]
        guards: list[Any] = [meta.get_field(name) for name in guarded]
        sql = compare_and_set_statement(model, self.field, fields, guarded)
        won = set()
        # A batch's rows often share a patched or guarded value (one timestamp, one note): each distinct
        # (column, value) is prepared once per statement.
        prepared: dict[tuple[str, Any], Any] = {}

        def prep(f: Any, value: Any) -> Any:
            if f.get_internal_type() == "JSONField":  # sent as text, cast to jsonb by the statement
                return None if value is None else json.dumps(value, cls=f.encoder)
            try:
                return prepared[f.name, value]
            except KeyError:
                out = prepared[f.name, value] = f.get_db_prep_save(value, connection)
                return out
            except TypeError:  # unhashable
                return f.get_db_prep_save(value, connection)

        for start in range(0, len(rows), 500):
            chunk = rows[start : start + 500]
            prepared.clear()
            arrays: list[list[Any]] = [[pk.get_db_prep_value(obj.pk, connection) for _, obj, _, _ in chunk]]
            arrays += [[prep(f, patch[f.name]) for _, _, _, patch in chunk] for f in patched]
            arrays += [[prep(f, decision.guard[f.name]) for _, _, decision, _ in chunk] for f in guards]
            params = [
                state.get_db_prep_save(to, connection),
                *arrays,
                state.get_db_prep_save(frm, connection),
            ]
            won.update(pk.to_python(value) for value in compare_and_set_run(sql, params))
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
            from owlat.models import AuditLog

            AuditLog.objects.bulk_create(
                [self._audit_entry(obj, actor, effect) for obj, effect in audits], batch_size=500
            )
        batch_handlers = self.batch_effect_handlers()
        handlers = self.effect_handlers()
        for name, items in calls.items():
            if name in batch_handlers:
                batch_handlers[name](items)
            else:
                for obj, kwargs in items:
                    handlers[name](obj, **kwargs)
