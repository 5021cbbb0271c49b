"""Coalesced wake-ups: at most one pending task per argument-less "wake" task.

A wake task (the batched walker's walk, say) does whatever is due when it runs, so a hundred wake-ups queued
while one is pending are a hundred broker rows, dequeues and no-op runs. `wake(func)` enqueues `func` only if no
wake-up of it is pending: a `WakeUp` row marks the pending one from the transaction that enqueued it until the
task calls `wake_taken(func)`, which deletes the row; the walk does so when it has nothing left to do, and then
looks once more. From then on the next `wake` enqueues again. A task that stops with work left hands on to its
successor (`wake_handed_on`), which inherits the marker.

No wake-up is lost. The danger is a writer W that finds the row present (so enqueues nothing) while the task is
already past its last look: it would finish before W's work commits and never see it. So on PostgreSQL W takes a
shared advisory lock with the marker (held to W's commit), and `wake_taken` deletes the row under the exclusive
lock: it waits for every writer that might have relied on the row to commit, and what the task reads afterwards
(in later statements) includes their work. A writer that comes after the delete finds no row and enqueues.
Writers never wait on each other (shared locks, and `ON CONFLICT DO NOTHING` writes nothing when the row is there).

With the ORM broker on PostgreSQL the marker and the broker row are one statement in the caller's transaction;
`wake_cte` lets a caller put both into a statement of its own. With Redis the task is pushed after commit; should
that push be lost (the process dies between commit and push), the marker would block every later wake-up, so
the dispatcher's sweep `wakeups_stale` deletes markers older than `WAKE_STALE_AFTER` and enqueues their task.
Elsewhere (SQLite, django-q2's sync mode) `wake` is a plain `enqueue`.
"""

from __future__ import annotations

import datetime as dt
import zlib
from typing import Any

from django.db import connection
from django.utils import timezone

from owlat import sql
from owlat.jobs import QUEUES, _orm_broker_direct, _orm_broker_rows, enqueue

#: A marker older than this is taken to have lost its task (Redis push lost, task died before taking it).
WAKE_STALE_AFTER = dt.timedelta(seconds=60)
#: The advisory lock's first key: this module's namespace (the second is the task's CRC-32).
_LOCK_SPACE = 0x6F776B  # "owk"


def _coalesces() -> bool:
    from django_q.conf import Conf

    return connection.vendor == "postgresql" and not Conf.SYNC


def _lock_keys(func: str) -> list[int]:
    return [_LOCK_SPACE, zlib.crc32(func.encode()) - 2**31]


def _table() -> str:
    from owlat.models import WakeUp

    return WakeUp._meta.db_table


def wake_cte(func: str, *, queue: str | None = None, when: str = "TRUE") -> tuple[str, list[Any]] | None:
    """For a caller that wakes `func` inside one of its own PostgreSQL statements (the events intake's runs-open
    statement): the data-modifying CTEs `wake_lock, wake_mark, wake` to append after its own CTEs, and their
    parameters (they follow the caller's in the statement). `when` is an SQL condition over the caller's CTEs
    (e.g. "there is an immediate step run"). None when the caller must call `wake` instead (Redis, sync mode,
    the duplicate-delivery test switch, another database)."""
    from django.db import DEFAULT_DB_ALIAS
    from django_q.conf import Conf
    from django_q.models import OrmQ

    if queue is not None and queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}")
    if not _coalesces() or not _orm_broker_direct() or Conf.ORM != DEFAULT_DB_ALIAS:
        return None
    (row,) = _orm_broker_rows(func, [()], queue)
    return sql.wake_ctes(_table(), OrmQ._meta.db_table, when), [
        *_lock_keys(func),
        func,
        queue,
        timezone.now(),
        *row,
    ]


def wake(func: str, *, queue: str | None = None) -> bool:
    """Enqueue the argument-less task `func` on `queue` unless a wake-up of it is pending; in the caller's
    transaction (the broker row with the ORM broker, after commit with Redis, as `enqueue`). Returns whether a
    task was enqueued."""
    if not _coalesces():
        enqueue(func, queue=queue)
        return True
    part = wake_cte(func, queue=queue)
    if part is not None:
        return sql.wake_mark_and_enqueue(*part)
    marked = sql.wake_mark(_table(), [*_lock_keys(func), func, queue, timezone.now()])
    if marked:
        enqueue(func, queue=queue)
    return marked


def wake_taken(func: str) -> bool:
    """Called by the task `func` before it reads what is due for the last time: deletes the pending marker,
    waiting for every transaction that relied on it to commit. Its own statement (the advisory lock is taken first, by
    the scalar subquery the delete's key comes from); returns whether a marker was there."""
    if not _coalesces():
        return False
    return sql.wake_unmark(_table(), func, _lock_keys(func))


def wake_handed_on(func: str, *, queue: str | None = None) -> None:
    """Called by a running task `func` that leaves work for its successor (a walk that spent its time budget):
    enqueue the successor at once, whatever is pending. The pending marker, if any, passes to it (its age is
    reset, so a long chain of hand-ons is not taken for a lost task by `wakeups_stale`)."""
    from owlat.models import WakeUp

    if _coalesces():
        WakeUp.objects.filter(func=func).update(created_at=timezone.now())
    enqueue(func, queue=queue)


def wakeups_stale(*, now: dt.datetime | None = None) -> str:
    """The dispatcher's sweep: a marker older than `WAKE_STALE_AFTER` lost its task (a Redis push lost after
    commit, a task that died before taking it) and would block every later wake-up; delete it and enqueue its
    task. A marker whose task is merely waiting in a long queue costs one extra, harmless run."""
    from django.db import transaction

    from owlat.models import WakeUp

    now = now or timezone.now()
    with transaction.atomic():
        stale = list(
            WakeUp.objects.select_for_update(skip_locked=True)
            .filter(created_at__lt=now - WAKE_STALE_AFTER)
            .values_list("func", "queue")
        )
        for func, queue in stale:
            WakeUp.objects.filter(func=func).delete()
            enqueue(func, queue=queue)
    return f"re-enqueued {len(stale)} stale wake-ups"
