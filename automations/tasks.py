"""django-q2 entry points: ids in, walker/services called, a short summary out."""

from __future__ import annotations

from automations.walker import pending_delays_process, run_start, step_execute
from automations.walker_batch import walk_hop


def automation_run_start_task(run_id: str, *more: str) -> str:
    """Start the runs one fan-out opened (one task for all of them)."""
    return "; ".join(run_start(i) for i in (run_id, *more))


def automation_step_execute_task(run_id: str, step_run_id: str, retry_count: int = 0) -> str:
    return step_execute(run_id, step_run_id, int(retry_count))


def process_pending_delays_task(after: list | None = None) -> str:
    return f"dispatched {pending_delays_process(after=after)} pending step runs"


def automation_walk_task() -> str:
    """The batched walker: claim and execute batches of due step runs, walking on in this
    task while a batch leaves work due at once (`walk_hop`)."""
    return walk_hop()


def counters_rollup_task() -> str:
    """Fold the pending counter deltas; a no-op while another roll-up runs."""
    from automations.counters import counters_rollup

    return f"rolled up {counters_rollup(wait=False)} counter deltas"
