"""Running queued django-q2 tasks in-process (`drain_queue`; `drain_redis` for the Redis broker's lists) and
listing them (`queued_tasks`)."""

from __future__ import annotations

import dataclasses
import pydoc
from typing import Any

# ==========================================================================================================
# Running queued django-q2 tasks in-process
# ==========================================================================================================


@dataclasses.dataclass
class QueuedTask:
    id: int  # OrmQ row id
    queue: str  # "default" | "transactional" | "campaign"
    func: str
    args: tuple
    kwargs: dict
    package: dict


@dataclasses.dataclass
class DrainedTask:
    func: str
    args: tuple
    kwargs: dict
    queue: str
    ok: bool
    result: Any  # the function's return value (or the exception when ok is False)
    error: BaseException | None = None


def _require_orm_broker() -> None:
    from django.conf import settings

    if "orm" not in settings.Q_CLUSTER:
        raise RuntimeError("drain_queue/queued_tasks need the django-q2 ORM broker (REDIS_URL must be unset)")


def _func_name(func: Any) -> str:
    return func if isinstance(func, str) else f"{func.__module__}.{func.__qualname__}"


def queued_tasks(queue: str | None = None) -> list[QueuedTask]:
    """Tasks waiting in the django-q2 ORM broker (all queues, or `queue`), oldest first, decoded."""
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    _require_orm_broker()
    qs = OrmQ.objects.order_by("id")
    if queue is not None:
        qs = qs.filter(key=queue)
    out = []
    for row in qs:
        pkg = SignedPackage.loads(row.payload)
        out.append(
            QueuedTask(row.id, row.key, _func_name(pkg["func"]), tuple(pkg["args"]), dict(pkg["kwargs"]), pkg)
        )
    return out


def clear_queue() -> None:
    """Drop every task waiting in the ORM broker, and with them the pending wake-up markers (`owlat.wakeups`):
    a marker stands for a task in the queue, and a test that loses the tasks loses what they stood for."""
    from django_q.models import OrmQ

    from owlat.models import WakeUp

    _require_orm_broker()
    OrmQ.objects.all().delete()
    WakeUp.objects.all().delete()


def drain_queue(
    max_tasks: int = 1000,
    *,
    queue: str | None = None,
    dispatch_due: bool = True,
    raise_errors: bool = True,
) -> list[DrainedTask]:
    """Run queued django-q2 tasks in this process, oldest first, until none is left; returns what ran.

    Tasks enqueued by the tasks that run are run too (FIFO), and so are django-q2 chains. `queue` limits it
    to one queue ("default", "transactional", "campaign", "inbox"). With `dispatch_due`, due-task rows that are due now
    (`owlat.jobs.dispatch_due_tasks`) are handed over before each task; future ones stay. Stops after
    `max_tasks` tasks (check `queued_tasks()` for what is left). An exception in a task propagates unless
    `raise_errors=False`, in which case it is returned as a failed `DrainedTask`.
    """
    from django_q.brokers import get_broker
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage
    from django_q.tasks import async_chain

    from owlat.jobs import dispatch_due_tasks

    _require_orm_broker()
    ran: list[DrainedTask] = []
    while len(ran) < max_tasks:
        if dispatch_due:
            dispatch_due_tasks()
        qs = OrmQ.objects.order_by("id")
        if queue is not None:
            qs = qs.filter(key=queue)
        row = qs.first()
        if row is None:
            break
        OrmQ.objects.filter(id=row.id).delete()
        pkg = SignedPackage.loads(row.payload)
        func = pkg["func"]
        target = func if callable(func) else pydoc.locate(func)
        args, kwargs = tuple(pkg.get("args", ())), dict(pkg.get("kwargs", {}))
        if target is None:
            error: BaseException = ValueError(f"Function {func} is not defined")
            if raise_errors:
                raise error
            ran.append(DrainedTask(_func_name(func), args, kwargs, row.key, False, error, error))
            continue
        try:
            result = target(*args, **kwargs)
        except Exception as exc:
            if raise_errors:
                raise
            ran.append(DrainedTask(_func_name(func), args, kwargs, row.key, False, exc, exc))
            continue
        ran.append(DrainedTask(_func_name(func), args, kwargs, row.key, True, result))
        if pkg.get("chain"):
            async_chain(pkg["chain"], group=pkg.get("group"), broker=get_broker(row.key))
    return ran


def drain_redis(brokers: dict[str, Any], max_tasks: int = 1000) -> list[DrainedTask]:
    """Run the tasks waiting in django-q2 Redis brokers' lists (`{queue: broker}`) in this process, oldest first
    per list (LPOP, as the cluster's pusher takes them with BLPOP), until every list is empty; tasks they
    enqueue run too. An exception in a task propagates."""
    from django_q.signing import SignedPackage

    ran: list[DrainedTask] = []
    while len(ran) < max_tasks:
        popped = next(
            ((queue, p) for queue, b in brokers.items() if (p := b.connection.lpop(b.list_key)) is not None),
            None,
        )
        if popped is None:
            break
        queue, payload = popped
        pkg = SignedPackage.loads(payload)
        func = pkg["func"]
        target = func if callable(func) else pydoc.locate(func)
        if target is None:
            raise ValueError(f"Function {func} is not defined")
        args, kwargs = tuple(pkg.get("args", ())), dict(pkg.get("kwargs", {}))
        ran.append(DrainedTask(_func_name(func), args, kwargs, queue, True, target(*args, **kwargs)))
    return ran


def run_due_retry() -> tuple[float, str]:
    """Run the one parked provider retry (a due task) now; returns (its delay in seconds, the job's summary)."""
    from delivery.tasks import send_batch_task
    from owlat.models import DueTask

    task = DueTask.objects.get(func="delivery.tasks.send_batch_task")
    delay = (task.due_at - task.created_at).total_seconds()
    assert task.queue == "transactional" and set(task.kwargs) == {"retry_token", "attempts"}
    task.delete()
    return delay, send_batch_task(*task.args, **task.kwargs)
