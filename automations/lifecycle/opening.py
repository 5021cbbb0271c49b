"""AUT-17's fan-out, set-based: the `running` runs of a trigger firing opened in one insert (`runs_open_many`)
and, on PostgreSQL, with their step 0's pending step runs, the counter deltas and the walker's wake-up in one
statement (`runs_open_and_start_many`, built by `RunsOpening`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, transaction

from automations.lifecycle import sql
from automations.lifecycle.batch import _pending_row, step_runs_create_many
from automations.lifecycle.runs import RUNNING
from automations.models import AutomationRun, AutomationStep, AutomationStepRun


def runs_open_many(
    items: Sequence[tuple[Any, Any, Any, str, dict[str, Any] | None]],
    *,
    at: dt.datetime,
    next_step_at: dict[Any, dt.datetime | None] | None = None,
) -> list[tuple[Any, Any]]:
    """AUT-17 set-based: `running` runs for (automation id, organization id, contact id, triggered_by,
    trigger_data) in one `INSERT … ON CONFLICT DO NOTHING RETURNING` — the partial unique index decides races
    (a contact with a running run gets none) without a savepoint per run; each opened run is counted as
    entered (one delta insert). `next_step_at` (by automation id): the run's first step's due time, when the
    caller schedules step 0 in the same transaction. Returns (run id, automation id) of the runs opened.
    Portable (SQLite 3.35+ has both clauses): values through the fields' own conversions, no casts."""
    import uuid

    from automations.counters import record_run_counts

    if not items:
        return []
    field = AutomationRun._meta.get_field
    pk, data_field, time_field = field("id"), field("trigger_data"), field("started_at")
    params: list[Any] = []
    for automation_id, organization_id, contact_id, triggered_by, trigger_data in items:
        params += [
            pk.get_db_prep_value(uuid.uuid4(), connection),
            pk.get_db_prep_value(organization_id, connection),
            pk.get_db_prep_value(automation_id, connection),
            pk.get_db_prep_value(contact_id, connection),
            RUNNING,
            time_field.get_db_prep_value(at, connection),
            triggered_by,
            data_field.get_db_prep_value(trigger_data, connection),
            time_field.get_db_prep_value((next_step_at or {}).get(automation_id), connection),
        ]
    with transaction.atomic(savepoint=False):
        opened = [(pk.to_python(r), pk.to_python(a)) for r, a in sql.runs_insert(params, len(items))]
        counts: dict[Any, dict[str, int]] = {}
        for _, automation_id in opened:
            counts.setdefault(automation_id, {"entered": 0})["entered"] += 1
        record_run_counts(counts)
    return opened


def runs_open_and_start_many(
    items: Sequence[
        tuple[Any, Any, Any, str, dict[str, Any] | None, AutomationStep | None, dt.datetime | None]
    ],
    *,
    at: dt.datetime,
    wake: str | None = None,
) -> tuple[list[tuple[Any, Any]], list[AutomationStepRun]]:
    """`runs_open_many` and `step_runs_create_many` of their step 0 in one go: for (automation id, organization
    id, contact id, triggered_by, trigger_data, step 0 or None, step 0's due time or None) the `running` runs
    (the partial unique index drops a contact's second running run), the `entered` counter deltas, step 0's
    `pending` step run of each opened run and its counter delta. On PostgreSQL that is one statement (data-
    modifying CTEs, `RunsOpening`; the events API runs it on every call), elsewhere the two
    functions. Returns (run id, automation id) of the runs opened and the step runs created for them. `wake`:
    an argument-less task (the walker's walk) woken, coalesced (`owlat.wakeups`), when a step 0 due at once was
    created; with the ORM broker on PostgreSQL by the same statement."""
    from owlat import wakeups

    if not items:
        return [], []
    if connection.vendor != "postgresql":
        opened = runs_open_many(
            [item[:5] for item in items], at=at, next_step_at={item[0]: item[6] for item in items}
        )
        first = {item[0]: item for item in items}
        created = step_runs_create_many(
            [
                (
                    AutomationRun(id=run_id, organization_id=first[a_id][1], automation_id=a_id),
                    first[a_id][5],
                    at,
                    first[a_id][6],
                )
                for run_id, a_id in opened
                if first[a_id][5] is not None
            ]
        )
        if wake is not None and any(row.delay_until is None for row in created):
            wakeups.wake(wake)
        return opened, created
    opening = RunsOpening(items, at=at, wake=wake)
    opened = sql.runs_open(opening.ctes, opening.params, prepared=opening.preparable)
    created = opening.created(opened)
    if wake is not None and not opening.wakes and any(row.delay_until is None for row in created):
        wakeups.wake(wake)
    return opened, created


class RunsOpening:
    """The PostgreSQL form of `runs_open_and_start_many` as data-modifying CTEs (`v, run, entered, started,
    step_run, step_pending` and, when `wakes`, `owlat.wakeups.wake_cte`'s), for a statement that adds its own
    CTEs and ends with a `SELECT … FROM run` (the runs opened: `id, automation_id`): `runs_open_and_start_many`.
    `params` follow the statement's text; `created(opened)` gives the step runs of the runs opened."""

    def __init__(
        self,
        items: Sequence[
            tuple[Any, Any, Any, str, dict[str, Any] | None, AutomationStep | None, dt.datetime | None]
        ],
        *,
        at: dt.datetime,
        wake: str | None = None,
    ) -> None:
        import json
        import uuid

        values: list[str] = []
        params: list[Any] = []
        # step 0's rows are built as instances only when asked for (`created`)
        self._pending: dict[Any, tuple[Any, Any, Any, AutomationStep, dt.datetime | None]] = {}
        self._at = at
        for automation_id, organization_id, contact_id, triggered_by, trigger_data, step, due in items:
            run_id = uuid.uuid4()
            step_run_id = None
            if step is not None:
                step_run_id = uuid.uuid4()
                self._pending[run_id] = (step_run_id, organization_id, automation_id, step, due)
            values.append(
                "(%s::uuid, %s::uuid, %s::uuid, %s::uuid, %s, %s::jsonb, %s::timestamptz, "
                "%s::uuid, %s::uuid, %s::integer, %s)"
            )
            params += [
                str(run_id),
                str(organization_id),
                str(automation_id),
                str(contact_id),
                triggered_by,
                None if trigger_data is None else json.dumps(trigger_data),
                due,
                None if step is None else str(step_run_id),
                None if step is None else str(step.pk),
                None if step is None else step.step_index,
                None if step is None else step.step_type,
            ]
        #: one row: the statement's text is always the same (prepare it, `owlat.sql`)
        self.preparable = len(values) == 1
        self.ctes, self.params, self.wakes = _opening_ctes(
            f"VALUES {', '.join(values)}", params, at=at, wake=wake
        )

    def created(self, opened: Iterable[tuple[Any, Any]]) -> list[AutomationStepRun]:
        """The step 0 rows written for the runs `opened` (the statement's (run id, automation id) rows)."""
        rows = []
        for run_id, _ in opened:
            if run_id in self._pending:
                step_run_id, organization_id, automation_id, step, due = self._pending[run_id]
                run = AutomationRun(id=run_id, organization_id=organization_id, automation_id=automation_id)
                row = _pending_row(run, step, scheduled_at=self._at, delay_until=due)
                row.pk = step_run_id
                rows.append(row)
        return rows


def _opening_ctes(
    source: str, source_params: list[Any], *, at: dt.datetime, wake: str | None = None
) -> tuple[str, list[Any], bool]:
    """The CTEs of `RunsOpening` over the runs `source` gives (a `VALUES` list of the columns
    (id, organization_id, automation_id, contact_id, triggered_by, trigger_data, next_step_at, step_run_id,
    step_id, step_index, step_type): a run to open and its step 0's row, step_run_id null for none), their
    parameters (`source_params` first), and whether they wake `wake` (else the caller calls `wakeups.wake` when a
    step 0 due at once was created: Redis, sync mode)."""
    from owlat import wakeups

    in_statement = None
    if wake is not None:
        in_statement = wakeups.wake_cte(
            wake, when="EXISTS (SELECT 1 FROM started WHERE next_step_at IS NULL)"
        )
    ctes, params = sql.opening_ctes(source, at, in_statement)
    return ctes, [*source_params, *params], in_statement is not None
