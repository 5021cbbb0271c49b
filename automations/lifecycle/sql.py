"""The automation lifecycles' hand-written statements: the set-based claims and writes of runs and step runs.

They write the status fields, so they live inside the lifecycle package (the one writer of those fields);
every other statement of the app is in `automations.sql`. Each says why it is raw and names its twin, the
ORM form its caller runs on the other databases (SQLite). Values are bound as parameters; table and column
names come from the models' `_meta`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Model

from automations.lifecycle.runs import EXECUTING, PENDING, RUNNING
from automations.models import Automation, AutomationCounterDelta, AutomationRun, AutomationStepRun
from owlat.models import Contact
from owlat.sql import prepared_cursor


def step_runs_claim(
    *, at: dt.datetime, limit: int, ids: Sequence[Any] | None, with_claim: tuple[tuple[str, type[Model]], ...]
) -> list[tuple[Any, ...]]:
    """`step_runs_claim_due`'s one statement: the due pending rows (or the pending ones among `ids`) locked
    with SKIP LOCKED, moved `pending → executing`, each run's `steps_executed` + 1, the counter deltas; per
    claimed row its columns, the run's new count, and the columns of `with_claim`'s run, contact and
    automation. Why raw: a SKIP LOCKED claim with RETURNING and data-modifying CTEs (twin:
    `_claim_due_serialized`, the set-based runner where writers are serialized)."""
    sr = AutomationStepRun._meta.db_table
    run = AutomationRun._meta.db_table
    delta = AutomationCounterDelta._meta.db_table
    if ids is not None:
        due = (
            f"SELECT id FROM {sr} WHERE status = %s AND id = ANY(%s::uuid[]) LIMIT %s FOR UPDATE SKIP LOCKED"
        )
        params: list[Any] = [PENDING, [str(i) for i in ids], limit]
    else:
        # The two kinds of due rows each through a partial index (steprun_pending_delay) as a plain index scan,
        # those whose delay has passed first: as one OR the planner takes a bitmap scan, which visits every dead
        # entry the claimed rows left in the pending indexes since the last vacuum on every claim (a bitmap scan
        # never marks them dead; an index scan does). The outer LIMIT stops the scans, and the locking, at
        # `limit` rows.
        due = (
            f"SELECT id FROM (SELECT id FROM (SELECT id FROM {sr} WHERE status = %s AND delay_until <= %s "
            f"LIMIT %s FOR UPDATE SKIP LOCKED) AS came_due UNION ALL SELECT id FROM (SELECT id FROM {sr} "
            f"WHERE status = %s AND delay_until IS NULL LIMIT %s FOR UPDATE SKIP LOCKED) AS now_due) AS due "
            f"LIMIT %s"
        )
        params = [PENDING, at, limit, PENDING, limit, limit]
    fields = AutomationStepRun._meta.concrete_fields
    qn = connection.ops.quote_name
    joined = ", ".join(
        f"{alias}.{qn(f.column)}" for alias, model in with_claim for f in model._meta.concrete_fields
    )
    # COALESCE(s.status, …): the guard (redundant with the lock's recheck) is a filter on the primary key's
    # rows, not a reason to AND the pending partial indexes (and their dead entries) into the scan.
    statement = f"""
        WITH claimed AS (
            UPDATE {sr} AS s SET status = %s, started_at = %s, attempt = 0
            WHERE s.id = ANY(ARRAY({due})) AND COALESCE(s.status, '') = %s
            RETURNING {", ".join(f"s.{qn(f.column)}" for f in fields)}
        ), counted AS (
            UPDATE {run} AS r SET steps_executed = r.steps_executed + 1
            FROM claimed WHERE r.id = claimed.run_id
            RETURNING r.id, r.steps_executed
        ), moved AS (
            INSERT INTO {delta} (step_id, field, delta)
            SELECT claimed.step_id, m.field, m.sign * count(*) FROM claimed
            CROSS JOIN (VALUES (%s, -1), (%s, 1)) AS m (field, sign)
            WHERE claimed.step_id IS NOT NULL GROUP BY claimed.step_id, m.field, m.sign
        )
        SELECT {", ".join(f"claimed.{qn(f.column)}" for f in fields)}, counted.steps_executed, {joined}
        FROM claimed LEFT JOIN counted ON counted.id = claimed.run_id
        LEFT JOIN {run} AS r ON r.id = claimed.run_id
        LEFT JOIN {qn(Contact._meta.db_table)} AS c ON c.id = r.contact_id
        LEFT JOIN {qn(Automation._meta.db_table)} AS a ON a.id = r.automation_id
    """
    with connection.cursor() as cursor:  # one statement: atomic on its own
        cursor.execute(statement, [EXECUTING, at, *params, PENDING, PENDING, EXECUTING])
        return cursor.fetchall()


def step_runs_advance(rows: Sequence[AutomationStepRun]) -> None:
    """`step_runs_advance_many`'s one statement: each row's run moved to its step (`current_step_index`,
    `next_step_at` = the row's `delay_until`), the pending step runs inserted, +1 pending per step. Why raw:
    data-modifying CTEs over `unnest` arrays, a fixed text whatever the number of rows (twin: an update per run
    and `step_runs_create_many`)."""
    statement = f"""
        WITH v (id, organization_id, run_id, step_id, step_index, step_type, scheduled_at, delay_until) AS (
            SELECT * FROM unnest(%s::uuid[], %s::uuid[], %s::uuid[], %s::uuid[], %s::integer[], %s::varchar[],
                                 %s::timestamptz[], %s::timestamptz[])
        ),
        moved AS (
            UPDATE {AutomationRun._meta.db_table} AS r
            SET current_step_index = v.step_index, next_step_at = v.delay_until
            FROM v WHERE r.id = v.run_id
        ),
        created AS (
            INSERT INTO {AutomationStepRun._meta.db_table} (id, organization_id, run_id, step_id, step_index,
                step_type, status, scheduled_at, delay_until, retry_count, attempt)
            SELECT id, organization_id, run_id, step_id, step_index, step_type, %s, scheduled_at, delay_until, 0, 0
            FROM v
        )
        INSERT INTO {AutomationCounterDelta._meta.db_table} (step_id, field, delta)
        SELECT step_id, %s, count(*) FROM v GROUP BY step_id
    """
    params: list[Any] = [
        [str(r.pk) for r in rows],
        [str(r.organization_id) for r in rows],
        [str(r.run_id) for r in rows],
        [str(r.step_id) for r in rows],
        [r.step_index for r in rows],
        [r.step_type for r in rows],
        [r.scheduled_at for r in rows],
        [r.delay_until for r in rows],
        PENDING,
        PENDING,
    ]
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def runs_insert(params: list[Any], count: int) -> list[tuple[Any, Any]]:
    """`runs_open_many`'s `INSERT … ON CONFLICT DO NOTHING RETURNING id, automation_id` of `count` running runs
    (nine parameters a run, as the fields prepare them). Portable, both databases run it (SQLite 3.35+ has
    both clauses); why raw: the partial unique index decides races without a savepoint per run."""
    rows_sql = ", ".join(["(%s, %s, %s, %s, 0, 0, %s, %s, %s, %s, %s)"] * count)
    statement = (
        f"INSERT INTO {AutomationRun._meta.db_table} (id, organization_id, automation_id, contact_id, "
        "current_step_index, steps_executed, status, started_at, triggered_by, trigger_data, next_step_at) "
        f"VALUES {rows_sql} ON CONFLICT DO NOTHING RETURNING id, automation_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return [(row[0], row[1]) for row in cursor.fetchall()]


def opening_ctes(source: str, at: dt.datetime, wake: tuple[str, list[Any]] | None) -> tuple[str, list[Any]]:
    """The data-modifying CTEs of `RunsOpening` over the runs `source` gives (a `VALUES` list of the columns
    id, organization_id, automation_id, contact_id, triggered_by, trigger_data, next_step_at, step_run_id,
    step_id, step_index, step_type), then `wake`'s (`owlat.wakeups.wake_cte`), and the parameters that follow
    `source`'s. Why raw: runs, step 0 rows, counter deltas and the wake-up in one statement on the events API's
    path (twin: `runs_open_many` and `step_runs_create_many`)."""
    delta_table = AutomationCounterDelta._meta.db_table
    ctes = f"""
        v (id, organization_id, automation_id, contact_id, triggered_by, trigger_data, next_step_at,
           step_run_id, step_id, step_index, step_type) AS ({source}),
        run AS (
            INSERT INTO {AutomationRun._meta.db_table} (id, organization_id, automation_id, contact_id,
                current_step_index, steps_executed, status, started_at, triggered_by, trigger_data, next_step_at)
            SELECT id, organization_id, automation_id, contact_id, 0, 0, %s, %s, triggered_by, trigger_data,
                   next_step_at FROM v
            ON CONFLICT DO NOTHING RETURNING id, automation_id
        ),
        entered AS (
            INSERT INTO {delta_table} (automation_id, field, delta)
            SELECT automation_id, 'entered', count(*) FROM run GROUP BY automation_id
        ),
        started AS (
            SELECT v.* FROM v JOIN run ON run.id = v.id WHERE v.step_run_id IS NOT NULL
        ),
        step_run AS (
            INSERT INTO {AutomationStepRun._meta.db_table} (id, organization_id, run_id, step_id, step_index,
                step_type, status, scheduled_at, delay_until, retry_count, attempt)
            SELECT step_run_id, organization_id, id, step_id, step_index, step_type, %s, %s, next_step_at, 0, 0
            FROM started
        ),
        step_pending AS (
            INSERT INTO {delta_table} (step_id, field, delta)
            SELECT step_id, %s, count(*) FROM started GROUP BY step_id
        ){"" if wake is None else f", {wake[0]}"}
    """
    return ctes, [RUNNING, at, PENDING, at, PENDING, *(wake or ("", []))[1]]


def runs_open(ctes: str, params: list[Any], *, prepared: bool) -> list[tuple[Any, Any]]:
    """Run `opening_ctes` on their own: the (run id, automation id) of the runs opened. `prepared`: the text is
    one of a few (one run), so it runs as a prepared statement (`owlat.sql.prepared_cursor`)."""
    with prepared_cursor() if prepared else connection.cursor() as cursor:
        cursor.execute(f"WITH {ctes} SELECT id, automation_id FROM run", params)
        return [(row[0], row[1]) for row in cursor.fetchall()]
