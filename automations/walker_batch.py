"""The batched walker (issue 12 item 1; overrides AUT-18/19/23's one `execute_step` task per step).

`walk` claims due step runs in batches (one `UPDATE … WHERE id = ANY(ARRAY(SELECT … FOR UPDATE SKIP LOCKED))
RETURNING`, `automations.lifecycle.step_runs_claim_due`) and `execute_claimed` executes them with the runs,
contacts, automations and steps read once per batch; each step kind runs its batch through its module
(`execute_many`, else `execute` per item), and the outcomes are written set-based in one transaction: the
completions, the modules' prepared work (`commit_many`, e.g. the email rows in one insert), skipped rows, finished
runs and the next step runs. One django-q2 hop per batch: the batch enqueues one `walk` when it created
immediate step runs (or left a backlog); a delayed step keeps its own due task at its time (AUT-24).

Every AUT rule holds per item: the active guard (AUT-22), the loop cap (AUT-25), retries 1/5/30 s and the
breaker (AUT-26/27, row by row through `walker._retry_or_fail`: failures are rare), skipped rows (AUT-23).
A step whose module raises fails alone: its item becomes a failed outcome; if the batch's write transaction
raises, the items are written again one by one, so only the item that raises goes to its retries.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from automations.lifecycle import ClaimedStepRun, runs_finish_many, step_runs_claim_due
from automations.lifecycle.batch import (
    step_runs_advance_many,
    step_runs_complete_many,
    step_runs_fail_many,
    step_runs_skip_many,
)
from automations.models import AutomationRun, AutomationStatus, AutomationStep, RunStatus
from automations.steps import StepContext, StepOutcome, step_module_for
from owlat import wakeups
from owlat.jobs import enqueue
from owlat.sql import prepared_models

logger = logging.getLogger(__name__)

WALK_TASK = "automations.tasks.automation_walk_task"
WALK_BATCH = 200
#: A walk task walks on, batch after batch, for at most this long (far below django-q2's timeout).
WALK_HOP_SECONDS = 5.0
#: After a batch of fewer step runs than this the walk pauses `AUTOMATION_WALK_LINGER_MS` before its next claim, so
#: that under a steady stream of events a batch takes what arrived meanwhile: the per-batch work (the claim, the
#: reads, the set-based writes, the transactional job its mails go to) is shared by more step runs. A pause costs
#: no CPU; it delays a step already due by at most that long.
WALK_LINGER_BELOW = 50
#: The stream's rate is estimated over the intervals between this many + 1 of the walk's latest claims.
WALK_RATE_CLAIMS = 3
NOTHING_DUE = "nothing due"


@dataclass
class _Item:
    claimed: ClaimedStepRun
    run: AutomationRun
    step: AutomationStep
    steps: dict[int, AutomationStep]
    module: ModuleType | None = None
    config: Any = None
    outcome: StepOutcome | None = None


def wake_walk() -> None:
    """Wake the batched walker: enqueue a walk unless one is already pending (`owlat.wakeups`, issue 12 item 2:
    without this every event's run queued a walk, 109,437 of them at 100,000 events, nearly all no-ops)."""
    wakeups.wake(WALK_TASK)


def walk(*, now: dt.datetime | None = None, limit: int = WALK_BATCH) -> str:
    """Claim and execute one batch of due step runs; a full batch enqueues the next walk at once."""
    return _walk_once(now=now, limit=limit, wake=True)[0]


def walk_hop(*, seconds: float = WALK_HOP_SECONDS, limit: int = WALK_BATCH) -> str:
    """The walk task: batch after batch in this task while its claims find step runs due, for at most `seconds`,
    instead of a django-q2 hop per batch (each hop costs a broker row, the cluster's dequeue, signing and result
    bookkeeping, and up to a poll interval of latency). After a batch that is not full it may pause (`_Stream`).

    Its wake-up stays pending while it walks (`owlat.wakeups`), so events arriving meanwhile queue no further
    walk: this walk takes their step runs with its next batch. When a claim finds nothing it takes the wake-up
    (waiting for every writer that relied on it to commit) and looks once more, so no writer's work is left
    behind; a writer after that wakes a new walk. When `seconds` are spent with work still coming, it hands on
    to the next walk, enqueued at once, which inherits the pending wake-up."""
    deadline = time.monotonic() + seconds
    summaries: list[str] = []
    taken = False
    stream = _Stream(limit)
    while True:
        claimed_at = time.monotonic()
        summary, _, count = _walk_once(now=None, limit=limit, wake=False)
        if count or not summaries:
            summaries.append(summary)
        if count:
            if time.monotonic() >= deadline:
                wakeups.wake_handed_on(WALK_TASK)
                break
            pause = stream.pause(claimed_at, count, time.monotonic())
            if pause > 0:
                time.sleep(pause)  # let the stream fill the next batch
            continue
        if taken:
            break
        wakeups.wake_taken(WALK_TASK)  # the writers that relied on this walk have committed: one more look
        taken = True
    return "; ".join(summaries)


class _Stream:
    """The walk's pause before its next claim (issue 12). After a full batch none (a backlog). A slow stream (the
    one at 50 events/s) gets `AUTOMATION_WALK_LINGER_MS` after a batch of fewer than `WALK_LINGER_BELOW` step
    runs, as before. A fast stream, one whose rate over the latest claims would bring at least half a batch within
    `AUTOMATION_WALK_LINGER_MAX_MS`, is given the time it needs to fill a batch, at most that long: there the
    per-batch work (claim, reads, writes, the transactional job its mails go to) is shared by up to `limit` step
    runs, and the CPU it saves is what a busy machine needs. A pause costs no CPU."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.claims: list[tuple[float, int]] = []  # (monotonic time of the claim, step runs it found)

    def pause(self, claimed_at: float, count: int, now: float) -> float:
        """Seconds to wait after the claim at `claimed_at` found `count` step runs (processed by `now`)."""
        self.claims = [*self.claims[-WALK_RATE_CLAIMS:], (claimed_at, count)]
        if count >= self.limit:
            return 0.0
        linger = settings.AUTOMATION_WALK_LINGER_MS / 1000
        longest = settings.AUTOMATION_WALK_LINGER_MAX_MS / 1000
        rate = self.rate()
        if linger > 0 and longest > linger and rate * longest >= self.limit / 2:
            return max(0.0, min(longest, self.limit / rate - (now - claimed_at)))
        return linger if linger > 0 and count < min(self.limit, WALK_LINGER_BELOW) else 0.0

    def rate(self) -> float:
        """Step runs per second over the latest claims: what the claims after the first found, over the time
        since it (0 before the walk's second claim)."""
        if len(self.claims) < 2:
            return 0.0
        span = self.claims[-1][0] - self.claims[0][0]
        return sum(n for _, n in self.claims[1:]) / span if span > 0 else 0.0


def _walk_once(*, now: dt.datetime | None, limit: int, wake: bool) -> tuple[str, bool, int]:
    """One batch; returns its summary, whether work it left is due at once (a full batch, or immediate step
    runs created) and how many step runs it claimed. With `wake` that work gets its walk enqueued; without, the
    caller walks on."""
    now = now or timezone.now()
    claimed = step_runs_claim_due(at=now, limit=limit)
    if not claimed:
        return NOTHING_DUE, False, 0
    woke: list[bool] = []
    summaries = execute_claimed(claimed, now=now, woke=woke, wake=wake)
    full = len(claimed) >= limit
    if wake and full and not woke:  # a backlog: the next walk at once (unless the batch woke one)
        wake_walk()
    counts: dict[str, int] = defaultdict(int)
    for text in summaries.values():
        counts[text.split(":")[0].split(" (")[0]] += 1
    summary = f"{len(claimed)} step runs: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    return summary, full or bool(woke), len(claimed)


def execute_claimed(
    claimed: list[ClaimedStepRun], *, now: dt.datetime, woke: list[bool] | None = None, wake: bool = True
) -> dict[Any, str]:
    """Execute step runs this worker holds; returns a short summary per step run id. `woke` gets an entry
    for each committed write that created immediate step runs (with `wake`, it enqueued the next walk for
    them; without, the caller walks them itself)."""
    woke = [] if woke is None else woke
    summaries, give_up, work = _sort_claimed(claimed)

    # The modules run inside the write transaction: whatever a step did is undone with it when its completion is
    # not applied. If any item of the batch loses its completion, or the batch raises, the batch is rolled back
    # and its items are executed again one by one (each its own transaction), so only that item is affected.
    failed: list[_Item] = []
    # The runner moves the rows in memory too: keep their field values to start again from if the batch is
    # rolled back (a copy of each instance's __dict__: cheap, unlike copying the model instances).
    fresh = {id(x): (x, x.__dict__.copy()) for i in work for x in (i.claimed.step_run, i.run)}
    fresh.update(
        {id(x): (x, x.__dict__.copy()) for c, run, _ in give_up for x in (c.step_run, run) if x is not None}
    )
    try:
        batch_woke: list[bool] = []
        with transaction.atomic():
            summaries.update(
                _execute_and_write(work, give_up, now, failed, batch_woke, wake, whole_batch=True)
            )
        woke.extend(batch_woke)  # committed
    except Exception as exc:
        if not isinstance(exc, _NotApplied):
            logger.warning("automation walker: a batch of %d raised (%s); one by one", len(work), exc)
        failed.clear()
        for obj, values in fresh.values():
            obj.__dict__.clear()
            obj.__dict__.update(values)
        summaries.update(_one_by_one(work, give_up, now, failed, woke, wake))

    from automations.walker import _retry_or_fail

    for item in failed:
        error = (item.outcome.error if item.outcome else None) or "Step failed"
        sr = item.claimed.step_run
        summaries[sr.pk] = _retry_or_fail(item.run, sr.pk, item.claimed.attempt, error, now)
    return summaries


_GiveUp = tuple[ClaimedStepRun, "AutomationRun | None", str]


def _sort_claimed(claimed: list[ClaimedStepRun]) -> tuple[dict[Any, str], list[_GiveUp], list[_Item]]:
    """The claimed step runs split into those to give up (the run or contact gone, the run not running, the
    automation not active (AUT-22: no retry, no breaker count), the step gone, the loop cap of AUT-25), with
    their summaries, and the work to execute."""
    from automations.walker import (
        LOOP_CAP_MESSAGE,
        MAX_STEPS_PER_RUN,
        NOT_ACTIVE,
        RUN_OR_CONTACT_NOT_FOUND,
        STEP_NOT_FOUND,
    )

    # The runs, with contact and automation, as the claim statement read them; the others (a retry's claim, a
    # claim that did not read them) in one query.
    runs = {c.run.pk: c.run for c in claimed if c.run is not None}
    missing = {c.step_run.run_id for c in claimed} - set(runs)
    if missing:
        runs.update(
            (r.pk, r)
            for r in AutomationRun.objects.select_related("contact", "automation").filter(pk__in=missing)
        )
    automations = {r.automation_id: r.automation for r in runs.values()}
    steps: dict[Any, dict[int, AutomationStep]] = defaultdict(dict)
    for s in _steps_of(set(automations)):
        steps[s.automation_id][s.step_index] = s

    summaries: dict[Any, str] = {}
    give_up: list[_GiveUp] = []
    work: list[_Item] = []
    for c in claimed:
        run = runs.get(c.step_run.run_id)
        reason: tuple[AutomationRun | None, str, str] | None = None
        step = None
        if run is None or run.contact is None or run.contact.deleted_at is not None:
            reason = (run, RUN_OR_CONTACT_NOT_FOUND, RUN_OR_CONTACT_NOT_FOUND)
        elif run.status != RunStatus.RUNNING:
            reason = (None, "Automation run is no longer running", "run not running")
        elif automations[run.automation_id].status != AutomationStatus.ACTIVE:
            reason = (run, NOT_ACTIVE, "automation not active: run cancelled")
        elif (step := steps[run.automation_id].get(run.current_step_index)) is None:
            reason = (run, STEP_NOT_FOUND, "step not found: run cancelled")
        elif c.executed is not None and c.executed > MAX_STEPS_PER_RUN:
            reason = (run, LOOP_CAP_MESSAGE, "loop cap: run cancelled")
        if reason is not None:
            give_up.append((c, reason[0], reason[1]))
            summaries[c.step_run.pk] = reason[2]
        else:
            work.append(_Item(c, run, step, steps[run.automation_id]))
    return summaries, give_up, work


def _one_by_one(
    work: list[_Item],
    give_up: list[_GiveUp],
    now: dt.datetime,
    failed: list[_Item],
    woke: list[bool],
    wake: bool,
) -> dict[Any, str]:
    """After a batch was rolled back: each give-up and each item in its own transaction, so a failure affects
    that item alone (it joins `failed`)."""
    summaries: dict[Any, str] = {}
    for entry in give_up:
        try:
            with transaction.atomic():
                _write([], [entry], now, [])
        except Exception:
            logger.exception("automation walker: could not give up step run %s", entry[0].step_run.pk)
    for item in work:
        item.outcome = None
        try:
            item_woke: list[bool] = []
            with transaction.atomic():
                summaries.update(
                    _execute_and_write([item], [], now, failed, item_woke, wake, whole_batch=False)
                )
            woke.extend(item_woke)
        except Exception as exc:
            logger.warning("automation step %s of run %s raised: %s", item.step.step_index, item.run.pk, exc)
            item.outcome = StepOutcome.failed(str(exc) or type(exc).__name__)
            failed.append(item)
    return summaries


def _steps_of(automation_ids: set[Any]) -> list[AutomationStep]:
    """The steps of the batch's automations: on PostgreSQL one prepared statement (the same text every batch:
    parsed and planned once per connection, no ORM compilation), elsewhere the ORM's query."""
    if not automation_ids:
        return []
    if connection.vendor == "postgresql":
        return prepared_models(
            AutomationStep, "automation_id = ANY(%s::uuid[])", [[str(a) for a in automation_ids]]
        )
    return list(AutomationStep.objects.filter(automation_id__in=automation_ids))


class _NotApplied(Exception):
    """A completion of the batch was not applied: roll the batch back and go one by one."""


def _execute_and_write(
    work: list[_Item],
    give_up: list[tuple[ClaimedStepRun, AutomationRun | None, str]],
    now: dt.datetime,
    failed: list[_Item],
    woke: list[bool],
    wake: bool,
    *,
    whole_batch: bool,
) -> dict[Any, str]:
    """Inside the caller's transaction: the modules, then the writes; failed items are appended to `failed`
    (their retries are scheduled by the caller after the transaction)."""
    _run_modules(work, now)
    completed = [i for i in work if i.outcome is not None and i.outcome.status == "completed"]
    failed.extend(i for i in work if i.outcome is None or i.outcome.status != "completed")
    summaries = _write(completed, give_up, now, woke, wake)
    if any(text.startswith("completion not applied") for text in summaries.values()):
        if whole_batch and (len(work) > 1 or give_up):
            raise _NotApplied
        transaction.set_rollback(True)
    return summaries


def _run_modules(work: list[_Item], now: dt.datetime) -> None:
    """Each kind's items through its module; an exception becomes that item's failed outcome."""
    by_module: dict[str, list[tuple[_Item, StepContext]]] = defaultdict(list)
    for item in work:
        try:
            item.module = step_module_for(item.step.step_type)
            item.config = item.module.parse_config(item.step.config)
        except Exception as exc:
            item.outcome = _raised(item, exc)
            continue
        ctx = StepContext(
            organization_id=str(item.run.organization_id),
            automation_id=str(item.run.automation_id),
            run_id=str(item.run.pk),
            step_run_id=str(item.claimed.step_run.pk),
            contact_id=str(item.run.contact_id),
            step_index=item.step.step_index,
            now=now,
            contact=item.run.contact,
        )
        by_module[item.step.step_type].append((item, ctx))
    for entries in by_module.values():
        module = entries[0][0].module
        results = _execute(module, [(ctx, item.config) for item, ctx in entries])
        if results is None:  # the batch raised as a whole: run each item alone, so only the culprit fails
            results = []
            for item, ctx in entries:
                one = _execute(module, [(ctx, item.config)])
                results.append(one[0] if one else RuntimeError("step module failed"))
        for (item, _), result in zip(entries, results, strict=True):
            item.outcome = _raised(item, result) if isinstance(result, Exception) else result


def _execute(module: Any, items: list[tuple[StepContext, Any]]) -> list[Any] | None:
    many = getattr(module, "execute_many", None)
    try:
        if many is not None:
            return list(many(items))
    except Exception:
        logger.warning(
            "automation step module %s raised for a batch of %d", module.__name__, len(items), exc_info=True
        )
        return None
    out: list[Any] = []
    for ctx, config in items:
        try:
            out.append(module.execute(ctx, config))
        except Exception as exc:
            out.append(exc)
    return out


def _raised(item: _Item, exc: BaseException) -> StepOutcome:
    logger.warning(
        "automation step %s of run %s raised: %s", item.step.step_index, item.run.pk, exc, exc_info=exc
    )
    return StepOutcome.failed(str(exc) or type(exc).__name__)


def _write(
    completed: list[_Item],
    give_up: list[tuple[ClaimedStepRun, AutomationRun | None, str]],
    now: dt.datetime,
    woke: list[bool],
    wake: bool = True,
) -> dict[Any, str]:
    """One transaction: give-ups (step failed, run cancelled), completions by the attempt that holds them, the
    modules' prepared work for the applied ones, and the advance of their runs (AUT-23); `woke` gets an entry
    when the next walk was enqueued."""
    from automations.walker import EXECUTE_TASK, _entry_delay

    summaries: dict[Any, str] = {}
    if give_up:
        step_runs_fail_many([(c.step_run, error, None) for c, _, error in give_up], at=now)
        runs_finish_many([(run, RunStatus.CANCELLED) for _, run, _ in give_up if run is not None], at=now)
    if not completed:
        return summaries
    won = step_runs_complete_many(
        [
            (i.claimed.step_run, i.claimed.attempt, i.outcome.email_send_id, i.outcome.note)
            for i in completed
            if i.outcome is not None
        ],
        at=now,
    )
    winners = [i for i in completed if i.claimed.step_run.pk in won]
    for i in completed:
        if i.claimed.step_run.pk not in won:
            # Not ours any more (failed by a guard meanwhile): its prepared work is dropped, the run not advanced.
            summaries[i.claimed.step_run.pk] = "completion not applied: step rolled back"
    pending: dict[str, tuple[Any, list[Any]]] = {}
    for i in winners:
        if i.outcome is not None and i.outcome.pending is not None:
            pending.setdefault(i.step.step_type, (i.module, []))[1].append(i.outcome.pending)
    for module, items in pending.values():
        module.commit_many(items)

    skips: list[tuple[AutomationRun, list[AutomationStep]]] = []
    finishes: list[tuple[AutomationRun, str]] = []
    creates: list[tuple[AutomationRun, AutomationStep, dt.datetime, dt.datetime | None]] = []
    for i in winners:
        current = i.step.step_index
        nxt = i.outcome.next_step_index if i.outcome.next_step_index is not None else current + 1
        if nxt > current + 1:
            skips.append((i.run, [i.steps[k] for k in range(current + 1, nxt) if k in i.steps]))
        if nxt >= len(i.steps) or nxt not in i.steps:
            finishes.append((i.run, RunStatus.COMPLETED))
            summaries[i.claimed.step_run.pk] = "run completed"
            continue
        step = i.steps[nxt]
        delay = _entry_delay(step)
        due = now + delay if delay > dt.timedelta(0) else None
        creates.append((i.run, step, now, due))
        summaries[i.claimed.step_run.pk] = f"advanced to step {nxt}"
    step_runs_skip_many(skips, at=now)
    runs_finish_many(finishes, at=now)
    immediate = False
    for row in step_runs_advance_many(creates):
        if row.delay_until is not None:
            enqueue(EXECUTE_TASK, str(row.run_id), str(row.pk), 0, at=row.delay_until)
        else:
            immediate = True
    if immediate:
        if wake:
            wake_walk()
        woke.append(True)
    return summaries
