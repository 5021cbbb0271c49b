"""django-q2 entry points of the delivery pools (thin: ids in, services out, a short summary back)."""

from __future__ import annotations

from delivery.reaper import reap_stuck_sends
from delivery.worker import dispatch_batch


def send_batch_task(kind: str, send_ids: list[str], retry_token: str | None = None, attempts: int = 0) -> str:
    """One pool job (D-06): dispatch up to 100 rows of `kind` (`campaign` | `transactional`) at most once.
    A provider retry (issue 12 item 5) carries the parked row's `retry_token` and the attempts made before."""
    return str(dispatch_batch(kind, list(send_ids), retry_token=retry_token, attempts=attempts))


def reap_stuck_sends_task() -> str:
    """D-07 safety net (every minute): re-drive orphaned rows, flag lost hand-offs, expire unknown outcomes."""
    report = reap_stuck_sends(apply=True)
    return "reaped " + ", ".join(f"{k} {v}" for k, v in report.counts().items())
