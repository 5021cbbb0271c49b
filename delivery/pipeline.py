"""The helpers of one pool job (delivery.worker): the provider connections and the recorder of results.

The job's own thread claims and composes. Each composed row waits for a free connection of the job
(`Connections`, a sender thread each); its hand-off is marked just before its message goes on the wire (D-07),
by the sender thread that sends it (over its own database connection) or, when the job runs inside a
caller's transaction, by the job's thread once the connection is free. Every result — a provider's answer, a
row the job's thread refused before the wire (suppressed, not composable) — goes to the `Recorder`, which
records it through the send lifecycle in batches of `flush_size` rows (`send_transition_many`), parks
retryable refusals as due tasks and flags unknown outcomes (D-07).

The recorder runs in a thread of its own with its own database connection when the job runs outside a
transaction on PostgreSQL (a worker) and has more than a few rows (`start_thread`): the job's thread then never
waits for a result's commit while the connections could be sending. A small job records in its own thread.
Inside a caller's transaction a second connection would not see the caller's rows, so the recorder runs in
the job's thread (`pump`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from delivery import profiling
from delivery.lifecycle import Completion, SendRef, mark_outcome_unknown, park_for_retry, send_transition_many
from delivery.models import SendStatus
from delivery.providers import AMBIGUOUS_TIMEOUT, Transport

logger = logging.getLogger(__name__)


class Connections:
    """The job's provider connections, each carrying one message at a time, sent from a thread pool
    (`concurrent.futures`, a thread per connection). `submit(row, message, mark)` waits for a free connection,
    runs `mark(row, message)` (the hand-off; None when the sender thread marks the row itself), and gives the
    row to that connection: `attempt(row, message, transport)` runs on a sender thread and its answer goes to
    `on_result(row, outcome, error)` (None: nothing was sent). A connection is busy from its row's mark until
    the provider answered, so at most one handed-off row per connection is without an answer (D-07)."""

    def __init__(
        self,
        transports: list[Transport],
        attempt: Callable[[Any, Any, Transport], Any],
        on_result: Callable[[Any, Any, BaseException | None], None],
    ) -> None:
        self.transports = transports
        self._attempt = attempt
        self._on_result = on_result
        self._free: queue.SimpleQueue[Transport] = queue.SimpleQueue()
        for transport in transports:
            self._free.put(transport)
        self._pool = ThreadPoolExecutor(max_workers=len(transports), thread_name_prefix="owlat-send")
        self._cpu = 0.0
        self._lock = threading.Lock()

    def submit(self, row: Any, message: Any, mark: Callable[[Any, Any], bool] | None = None) -> bool:
        """Send `row` over the next free connection; False when `mark` says the claim was lost."""
        transport = self._free.get()
        if mark is not None and not mark(row, message):
            self._free.put(transport)
            return False
        self._pool.submit(self._run, transport, row, message)
        return True

    def _run(self, transport: Transport, row: Any, message: Any) -> None:
        try:
            outcome = self._attempt(row, message, transport)
        except BaseException as exc:  # a bug, not a provider answer: the job re-raises it
            self._on_result(row, None, exc)
        else:
            if outcome is not None:
                self._on_result(row, outcome, None)
        finally:
            self._free.put(transport)

    def close(self) -> None:
        """Wait for what was submitted, then close each sender thread's database connection (the hand-off
        mark, the DKIM key look-up): one task per thread, held at a barrier so each thread runs one."""
        threads = len(self.transports)
        barrier = threading.Barrier(threads)

        def close_connection() -> None:
            from django.db import connection

            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=30)
            connection.close()
            with self._lock:
                self._cpu += time.thread_time()

        for _ in range(threads):
            self._pool.submit(close_connection)
        self._pool.shutdown(wait=True)
        if profiling.enabled():
            profiling.thread_cpu("senders", self._cpu)


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
    """A retryable refusal with attempts left: park the row and hand it to its pool as a due
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
