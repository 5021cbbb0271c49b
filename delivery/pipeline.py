"""The helper threads of one pool job (delivery.worker, issue 12): the hand-off marker, the provider connections'
senders and the recorder of results.

The job's own thread claims, composes and marks the hand-off (D-07: committed before a message goes on the
wire). Handed-off messages wait in the senders' outbox (at most `outbox` of them) for one of the job's
connections, a sender thread each. Every result — a provider's answer from a sender, a row the job's thread
refused before the wire (suppressed, not composable) — goes to the `Recorder`, which records it through the
send lifecycle in batches of `flush_size` rows (`send_transition_many`), parks retryable refusals as due tasks
(issue 12 item 5) and flags unknown outcomes (D-07).

The recorder runs in a thread of its own with its own database connection when the job runs outside a
transaction on PostgreSQL (a worker) and has more than a few rows (`start_thread`): the job's thread then never
waits for a result's commit while the connections could be sending. A small job records in its own thread over
its own connection, without a thread and a new database connection for a handful of results. Inside a caller's transaction (tests, a caller that holds one) a second
connection would not see the caller's rows, so the recorder runs in the job's thread (`pump`) as before.

Where the recorder has its thread, a job's groups after the first are marked handed off by a `Marker` thread with
its own database connection, which gives each group to the senders once its mark has committed (D-07 unchanged:
no message goes on the wire before its row's mark is durable), while the job's thread composes the next group
instead of waiting for that commit.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from delivery import profiling
from delivery.lifecycle import Completion, SendRef, mark_outcome_unknown, park_for_retry, send_transition_many
from delivery.models import SendStatus
from delivery.providers import AMBIGUOUS_TIMEOUT, Transport

logger = logging.getLogger(__name__)


class Senders:
    """The job's provider connections, one sender thread each: rows already handed off go in (`put`, which
    waits while the outbox is full), each result goes to `on_result(row, outcome, error)`. A sender thread only
    talks to the provider."""

    def __init__(
        self,
        transports: list[Transport],
        send: Callable[[Any, Transport], Any],
        on_result: Callable[[Any, Any, BaseException | None], None],
        *,
        outbox: int,
    ) -> None:
        self.transports = transports
        self._send = send
        self._on_result = on_result
        self._outbox: queue.Queue[Any] = queue.Queue(maxsize=max(outbox, len(transports)))
        self._threads = [
            threading.Thread(target=self._run, args=(t,), name=f"owlat-send-{i}", daemon=True)
            for i, t in enumerate(transports)
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, transport: Transport) -> None:
        from django.db import connection

        started = time.thread_time()
        try:
            while (item := self._outbox.get()) is not None:
                row, message = item
                try:
                    outcome = self._send(message, transport)
                except BaseException as exc:  # a bug, not a provider answer: the job re-raises it
                    self._on_result(row, None, exc)
                else:
                    self._on_result(row, outcome, None)
        finally:
            connection.close()  # the thread's own DB connection (DKIM key look-up), if it opened one
            if profiling.enabled():
                profiling.thread_cpu("senders", time.thread_time() - started)

    def put(self, row: Any, message: Any) -> None:
        self._outbox.put((row, message))

    def close(self) -> None:
        """Send what is in the outbox, then stop the threads."""
        for _ in self._threads:
            self._outbox.put(None)
        for thread in self._threads:
            thread.join()


class Marker:
    """Hands groups of composed rows off in a thread of its own (`hand_off(group)`: the mark, then the rows to the
    senders) with its own database connection. `put(group)` waits while `depth` groups wait; `close()` waits for
    what was put. A failure in the thread is raised by the next `put` or by `close`; the groups after it are not
    handed off (their rows stay claimed, never on the wire, and are re-driven after the claim lease)."""

    def __init__(self, hand_off: Callable[[list[Any]], None], *, depth: int = 1) -> None:
        self._hand_off = hand_off
        self._groups: queue.Queue[list[Any] | None] = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="owlat-handoff", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from django.db import connection

        started = time.thread_time()
        try:
            while (group := self._groups.get()) is not None:
                if self.error is None:
                    try:
                        self._hand_off(group)
                    except BaseException as exc:  # kept for the job's thread
                        self.error = exc
        finally:
            connection.close()
            if profiling.enabled():
                profiling.thread_cpu("marker", time.thread_time() - started)

    def put(self, group: list[Any]) -> None:
        if self.error is not None:
            raise self.error
        self._groups.put(group)

    def close(self, *, raise_error: bool = True) -> None:
        """Wait for the groups put (once; later calls only raise), then raise the thread's failure."""
        if self._thread.is_alive():
            self._groups.put(None)
            self._thread.join()
        if raise_error and self.error is not None:
            raise self.error


class Recorder:
    """Records a job's results (see the module doc). `summary` is the job's `BatchSummary`: the recorder alone
    counts `sent`, `failed`, `unknown`, `retrying` and `errors` in it."""

    def __init__(
        self,
        kind: str,
        token: uuid.UUID,
        summary: Any,
        *,
        now: Callable[[], dt.datetime],
        flush_size: int,
        threaded: bool,
    ) -> None:
        self.kind = kind
        self.token = token
        self.summary = summary
        self.now = now
        self.flush_size = flush_size
        self.error: BaseException | None = None
        self._items: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._results: list[Completion] = []
        self._thread: threading.Thread | None = None
        if threaded:
            self.start_thread()

    def start_thread(self) -> None:
        """From the job's thread: record from a thread of its own from now on (what arrived and what is not
        flushed yet included); the job's thread no longer records (`pump` only raises)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="owlat-record", daemon=True)
            self._thread.start()

    @property
    def threaded(self) -> bool:
        """Whether the recorder records from a thread of its own (`start_thread`)."""
        return self._thread is not None

    # -- from any thread --------------------------------------------------------------------------------

    def result(self, row: Any, outcome: Any, error: BaseException | None) -> None:
        """A sender's answer: `outcome` is (DispatchResult, time of the answer); `error` a sender's bug."""
        self._items.put(("result", row, outcome, error))

    def failed(self, row: Any, *, error_code: str, error_message: str) -> None:
        """A row that did not go on the wire (suppressed, not composable, no transport)."""
        self._items.put(("failed", row, self.now(), error_code, error_message))

    # -- from the job's thread --------------------------------------------------------------------------

    def pump(self) -> None:
        """Inline (not threaded): record what has arrived. Raises a sender's bug or a recording error."""
        if self._thread is None:
            self._drain()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """After the senders are closed: record everything, then raise a sender's bug or recording error."""
        if self._thread is not None:
            self._items.put(None)
            self._thread.join()
        else:
            self._drain()
            self._flush()
        if self.error is not None:
            raise self.error

    # -- the recording ----------------------------------------------------------------------------------

    def _run(self) -> None:
        from django.db import connection

        started = time.thread_time()
        try:
            while (item := self._items.get()) is not None:
                self._process(item)
            self._flush()
        except BaseException as exc:  # kept for the job's thread; the items left are not recorded
            self.error = self.error or exc
            logger.exception("recording the results of a %s job failed", self.kind)
        finally:
            connection.close()
            if profiling.enabled():
                profiling.thread_cpu("recorder", time.thread_time() - started)

    def _drain(self) -> None:
        while True:
            try:
                item = self._items.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self._process(item)

    def _process(self, item: tuple[Any, ...]) -> None:
        if item[0] == "failed":
            _, row, at, code, message = item
            self._record(row, SendStatus.FAILED, at=at, error_code=code, error_message=message)
            self.summary.failed += 1
            return
        _, row, outcome, error = item
        if error is not None:
            self.error = self.error or error
            return
        self._handle(row, *outcome)

    def _handle(self, row: Any, result: Any, at: dt.datetime) -> None:
        summary = self.summary
        if result.retry_after_ms is not None:
            if _park(self.kind, row, self.token, result, at):
                summary.retrying += 1
            return
        if result.ok:
            self._record(
                row,
                SendStatus.SENT,
                at=at,
                provider_message_id=result.provider_message_id,
                provider_type=result.provider_type,
            )
            summary.sent += 1
        elif result.outcome_unknown:
            mark_outcome_unknown(
                self.kind,
                str(row.pk),
                error_code=result.error_code or AMBIGUOUS_TIMEOUT,
                error_message=result.error_message or "Provider acceptance unknown",
            )
            summary.unknown += 1
        else:
            self._record(
                row,
                SendStatus.FAILED,
                at=at,
                error_code=result.error_code,
                error_message=result.error_message,
            )
            summary.failed += 1
            code = result.error_code or "UNKNOWN"
            summary.errors[code] = summary.errors.get(code, 0) + 1

    def _record(self, row: Any, to: str, **fields: Any) -> None:
        # the row as loaded under the job's claim (and marked at hand-off): recorded without reading it again
        self._results.append(Completion(SendRef.of(row), to, fields, obj=row))
        if len(self._results) >= self.flush_size:
            self._flush()

    def _flush(self) -> None:
        if not self._results:
            return
        batch = list(self._results)
        self._results.clear()
        for outcome in send_transition_many(batch):
            if not outcome.ok:
                logger.info("send result not applied: %s", outcome.reason)


def _park(kind: str, row: Any, token: uuid.UUID, result: Any, at: dt.datetime) -> bool:
    """A retryable refusal with attempts left (issue 12 item 5): park the row and hand it to its pool as a due
    task after the provider's delay, in one transaction, instead of sleeping in the job."""
    from django.db import transaction

    from delivery.services import pool_for
    from owlat.jobs import enqueue

    due = at + dt.timedelta(milliseconds=result.retry_after_ms)
    with transaction.atomic():
        retry_token = park_for_retry(kind, str(row.pk), token, until=due)
        if retry_token is None:
            return False
        enqueue(
            "delivery.tasks.send_batch_task",
            kind,
            [str(row.pk)],
            at=due,
            queue=pool_for(kind),
            kwargs={"retry_token": str(retry_token), "attempts": result.attempts},
        )
    return True
