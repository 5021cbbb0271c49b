"""The pool worker (DLV-15 … DLV-18 as refined by D-06, D-07, D-08).

`dispatch_batch(kind, ids)` is what one pool job does (`PoolJob`): claim each given row on its own (rows
another worker holds, or that already left `queued`, are skipped), compose, re-check suppression, take a
pacing token, mark the row's hand-off and make one attempt through `send_provider_attempt` over a free one of
the job's provider connections (`DELIVERY_SMTP_CONNECTIONS` SMTP connections, a sender thread each), and
record every result through the send lifecycle (batched per campaign, in a recorder thread of its own;
delivery.pipeline). A retryable refusal is parked and handed to the pool as a due task after the provider's
delay; the job never sleeps between attempts, and checks its time budget before each row and while it waits
for a pacing token. A campaign job shares its rows with other organizations' waiting rows (the fair pool,
`delivery.fairness`) when it starts and, a part at a time, while it runs (`let_in`). A transactional job tops
its batch up with queued rows whose own job has not run yet and, while the pool has a backlog, goes on with it
a round of `BATCH_SIZE` rows at a time (`DRAIN_SECONDS`).

A row is dispatched at most once: the claim is a compare-and-set, the hand-off mark is a compare-and-set on the
claim token, and a row handed off without a result stays `queued` and flagged outcome-unknown, never re-sent
automatically (`delivery.reaper.reap_stuck_sends` resolves it after 24 hours; `resend_unknown` is the explicit
operator path).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.utils import timezone

from delivery import attachments as attachment_fetch
from delivery import profiling
from delivery.compose import ComposeError, compose_campaign, compose_transactional
from delivery.dispatch import send_provider_attempt
from delivery.fairness import fair_batch, let_in
from delivery.health import provider_health_flush
from delivery.lifecycle import (
    ClaimKeeper,
    campaigns_on_hold,
    claim_queued,
    claim_sends,
    claim_sends_topped_up,
    mark_handed_off,
    model_for,
    release_claims,
)
from delivery.models import SendStatus
from delivery.pacing import Pacer, take_pool_token
from delivery.pipeline import Connections, Recorder
from delivery.providers import (
    DispatchError,
    Transport,
    delivery_configured,
    get_transport,
    release_transport,
    retry_delays_ms,
    smtp_connections,
)
from delivery.rounds import SUPPRESSED_CODE, Round, read_round

logger = logging.getLogger(__name__)

BATCH_SIZE = 100  # D-06
# The job's thread claims and composes; a sender thread per provider connection marks each row's hand-off just
# before its message goes on the wire and sends it; a recorder thread records the results (RESULT_FLUSH_SIZE
# rows per transaction). A connection carries one marked row at a time, so a crash leaves at most one
# outcome-unknown row per open connection that may not have reached the wire (D-07: flagged, never re-sent
# automatically), besides the sent rows whose result was not recorded yet.
PIPELINE = True
RESULT_FLUSH_SIZE = 50  # results are recorded in one transaction per this many rows
RECORD_INLINE_ROWS = 10  # a job with at most this many rows (per round) records without a recorder thread
# Below the django-q2 timeout (120 s) minus one SMTP timeout (30 s): checked before each row and while waiting
# for a pacing token; the rest is handed to a new job. Provider retries never sleep here.
BATCH_TIME_BUDGET_SECONDS = 80.0
# A transactional job that finished its rows goes on with the pool's next queued rows (BATCH_SIZE per round,
# claimed like the top-up, as long as the last claim found all it asked for) over the same connections while
# it is younger than this: a backlog of automation
# mail is drained without a cold start (threads, connections, broker hop) per 100 rows.
DRAIN_SECONDS = 20.0


@dataclass
class BatchSummary:
    kind: str
    requested: int = 0
    claimed: int = 0
    sent: int = 0
    failed: int = 0
    unknown: int = 0
    skipped: int = 0
    released: int = 0
    retrying: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return (
            f"{self.kind}: requested {self.requested}, claimed {self.claimed}, sent {self.sent}, "
            f"failed {self.failed}, unknown {self.unknown}, skipped {self.skipped}, released {self.released}, "
            f"retrying {self.retrying}"
        )


def dispatch_batch(
    kind: str, ids: list[str], *, retry_token: str | None = None, attempts: int = 0, **options: Any
) -> BatchSummary:
    """One pool job: dispatch the given rows of `kind` (`campaign` | `transactional`) at most once each.
    Its claim is renewed while it runs (`ClaimKeeper`), so the rows of a killed job are re-driven quickly.
    A provider retry is a job of its own: `retry_token` claims the parked row, `attempts` were made before."""
    token = uuid.uuid4()
    job = PoolJob(
        kind,
        ids,
        token=token,
        retry_token=uuid.UUID(retry_token) if retry_token else None,
        prior_attempts=attempts if retry_token else 0,
        **options,
    )
    with ClaimKeeper(kind, token):
        if not profiling.enabled():
            return job.run()
        with profiling.job(lambda: job.summary.claimed):
            return job.run()


class PoolJob:
    """One pool job in named phases: `claim` the rows, `load` a round of them (`read_round`), then per row
    `compose` it, take its pacing token, `hand_off` (mark it just before its message goes on the wire) and
    `send` it over a free connection; the `Recorder` records every result. A transactional job goes on with
    the pool's next rows (`next_round`) while the pool has a backlog. `finish` closes the connections, records
    the last results and unclaims the rows of paused or cancelled campaigns."""

    def __init__(
        self,
        kind: str,
        ids: list[str],
        *,
        token: uuid.UUID,
        retry_token: uuid.UUID | None = None,
        prior_attempts: int = 0,
        transport_factory: Callable[[], Transport] = get_transport,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        pacer: Callable[[], None] | None = None,
        now: Callable[[], dt.datetime] = timezone.now,
        drain: bool = True,
        connections: int | None = None,
    ) -> None:
        self.kind, self.ids, self.token, self.retry_token = kind, ids, token, retry_token
        self.prior_attempts = prior_attempts
        self.transport_factory, self.clock, self.now, self.drain = transport_factory, clock, now, drain
        self.wanted_connections = connections
        self.summary = BatchSummary(kind=kind, requested=len(ids))
        self.prior: dict[str, int] = {}
        self.backlog = True  # whether the pool may have more queued rows for the drain (see DRAIN_SECONDS)
        self.cache: dict[Any, dict[Any, Any]] = {}
        self.pace = pacer if pacer is not None else Pacer(pool_name(kind), sleep=sleep)
        # A recorder thread with its own database connection, unless the job runs inside a caller's
        # transaction (whose rows another connection would not see) or on SQLite (one writer at a time);
        # then the sender threads do not touch the database either and the job's thread marks the hand-off.
        self.threaded = PIPELINE and connection.vendor == "postgresql" and not connection.in_atomic_block
        self.recorder = Recorder(
            kind, token, self.summary, now=now, flush_size=RESULT_FLUSH_SIZE, threaded=False
        )
        self.transports: list[Transport] = []
        self.connections: Connections | None = None
        self.holds = _Holds(clock) if kind == "campaign" else None
        # when the job last looked for other organizations' waiting rows (None: it never looks)
        self.fair_checked = clock() if kind == "campaign" and retry_token is None else None
        self.fair_again_at: int | None = None
        self.held_rows: list[str] = []
        self.started = clock()
        self._lock = threading.Lock()
        self.refusal = ""  # why the provider connection did not open

    def run(self) -> BatchSummary:
        won = self.claim()
        if not won:
            return self.summary
        current: Round | None = self.load(won)
        if not delivery_configured():
            for row in current.rows:  # type: ignore[union-attr]
                self.recorder.failed(
                    row, error_code="WORKPOOL_FAILED", error_message="No delivery provider configured"
                )
            self.recorder.close()
            return self.summary
        self.started = self.clock()
        failed = False
        try:
            while current is not None and self.send_round(current):
                current = self.next_round()
        except BaseException:
            failed = True
            raise
        finally:
            self.finish(failed)
        return self.summary

    # -- claim and load ------------------------------------------------------------------------------------

    def claim(self) -> list[str]:
        """Claim the given rows (rows another worker holds or that left `queued` are skipped); a small
        transactional job tops its batch up with queued rows whose own job has not run yet."""
        kind, ids, summary = self.kind, self.ids, self.summary
        if kind == "campaign" and self.retry_token is None:
            ids, rest = fair_batch(ids, limit=BATCH_SIZE, now=self.now())
            if rest:  # over this organization's fair share: back to the pool's queue
                from delivery.services import sends_enqueue

                sends_enqueue(kind, rest)
        top_up = self.drain and kind == "transactional" and len(ids) < BATCH_SIZE
        if top_up and connection.vendor == "postgresql":  # the rows and the top-up in one statement
            won, topped = claim_sends_topped_up(
                kind, ids, limit=BATCH_SIZE, token=self.token, retry_token=self.retry_token, now=self.now()
            )
            self.backlog = len(topped) == BATCH_SIZE - len(ids)
            summary.skipped = len(ids) - len(won)
            self._note_prior(won)
            won += topped
        else:
            self.token, won = claim_sends(
                kind, ids, token=self.token, retry_token=self.retry_token, now=self.now()
            )
            summary.skipped = len(ids) - len(won)
            self._note_prior(won)
            if top_up and len(won) < BATCH_SIZE:
                wanted = BATCH_SIZE - len(won)
                topped = claim_queued(kind, self.token, limit=wanted, exclude=won)
                won += topped
                self.backlog = len(topped) == wanted
        if summary.skipped:
            _defer_not_due(kind, ids, won, self.now())
        summary.claimed = len(won)
        order = {pk: i for i, pk in enumerate(ids)}
        return sorted(won, key=lambda pk: order.get(pk, len(order)))

    def _note_prior(self, won: list[str]) -> None:
        if self.retry_token is not None:  # a provider retry: the attempts made before count
            self.prior = dict.fromkeys(won, self.prior_attempts)

    def load(self, ids: list[str]) -> Round:
        """The round's rows in the order of `ids` (a campaign job's fair share: other organizations first)."""
        round_ = read_round(self.kind, ids, self.token, self.cache, join=len(ids) <= RECORD_INLINE_ROWS)
        order = {pk: i for i, pk in enumerate(ids)}
        round_.rows.sort(key=lambda row: order.get(str(row.pk), len(order)))
        return round_

    def next_round(self) -> Round | None:
        """The drain: while the pool has queued rows and the job is young, the next `BATCH_SIZE` rows go out
        over the same connections and recorder instead of a cold job of their own."""
        if not (self.drain and self.kind == "transactional") or not self.backlog:
            return None
        if self.clock() - self.started > DRAIN_SECONDS:
            return None
        more = claim_queued(self.kind, self.token, limit=BATCH_SIZE, now=self.now())
        self.backlog = len(more) == BATCH_SIZE
        if not more:
            return None
        self.summary.claimed += len(more)
        return self.load(more)

    # -- per row -------------------------------------------------------------------------------------------

    def send_round(self, round_: Round, *, nested: bool = False) -> bool:
        """Compose, pace, hand off and send one round's rows; False when the job ran out of time (the rest
        went back to the pool). A campaign job lets other organizations' waiting rows in (`let_in`) every
        `FAIR_CHECK_SECONDS`, as a round sent before its own rows still to go."""
        rows = round_.rows
        if self.threaded and len(rows) > RECORD_INLINE_ROWS:
            self.recorder.start_thread()
        for index, row in enumerate(rows):
            if self.clock() - self.started > BATCH_TIME_BUDGET_SECONDS:
                self.hand_back(rows[index:])
                return False
            if not nested and self.fair_due(index):
                if not self.let_in(rows, index):
                    self.hand_back(rows[index:])
                    return False
                if index >= len(rows):  # every own row still to go went back to the pool
                    return True
            if self.holds is not None and self.holds.held(row, rows[index:]):
                self.held_rows.append(str(row.pk))
                continue
            message = self.compose(row, round_)
            if message is None:
                continue
            if not self.open_connections(len(rows) - index):
                self.recorder.failed(row, error_code="WORKPOOL_FAILED", error_message=self.refusal)
                continue
            # This attempt's pacing token (D-06), within the job's time budget.
            if not take_pool_token(self.pace, BATCH_TIME_BUDGET_SECONDS - (self.clock() - self.started)):
                self.hand_back(rows[index:])
                return False
            self.send(row, message)
        return True

    def fair_due(self, index: int) -> bool:
        """Whether the job looks for other organizations' waiting rows before the row at `index`: every
        `FAIR_CHECK_SECONDS`, and right after a let-in once the own rows of its share went out (the floor)."""
        if self.fair_checked is None:
            return False
        if self.fair_again_at is not None:
            if index < self.fair_again_at:
                return False
        elif self.clock() - self.fair_checked < FAIR_CHECK_SECONDS:
            return False
        self.fair_checked, self.fair_again_at = self.clock(), None
        return True

    def let_in(self, rows: list[Any], index: int) -> bool:
        """Other organizations' waiting rows let into the running job ahead of its own rows still to go
        (`delivery.fairness.let_in`); False when the job ran out of time sending them."""
        return let_in(self, rows, index)

    def compose(self, row: Any, round_: Round) -> Any | None:
        """The row's message, or None when it was refused before the wire (recorded as failed)."""
        refusal = round_.refusal(row)
        if refusal is not None:
            self.recorder.failed(row, error_code=SUPPRESSED_CODE, error_message=refusal)
            return None
        try:
            return _compose(row, round_.contexts, round_.mail_options)
        except ComposeError as exc:
            self.recorder.failed(row, error_code=exc.code, error_message=exc.message)
        except attachment_fetch.AttachmentError as exc:
            self.recorder.failed(row, error_code="ATTACHMENT_FETCH_FAILED", error_message=str(exc))
        return None

    def open_connections(self, rows_left: int) -> bool:
        """The job's provider connections, opened with its first message: `DELIVERY_SMTP_CONNECTIONS` for
        SMTP (one per row at most), one otherwise. False (the row recorded as failed) when none opens."""
        if self.transports:
            return True
        try:
            self.transports.append(self.transport_factory())
        except DispatchError as exc:
            return self._refused(exc.message)
        first = self.transports[0]
        if PIPELINE and first.provider_type != "local":
            wanted = self.wanted_connections or (smtp_connections() if first.provider_type == "smtp" else 1)
            while len(self.transports) < min(wanted, rows_left):
                self.transports.append(self.transport_factory())
            self.connections = Connections(self.transports, self._attempt, self.recorder.result)
        return True

    def _refused(self, reason: str) -> bool:
        self.refusal = reason
        return False

    def hand_off(self, row: Any, message: Any) -> bool:
        """Mark the row handed off (committed before its message goes on the wire; D-07); False when the
        claim was lost (its lease ran out and another worker took it)."""
        handed_at = self.now()
        if not mark_handed_off(
            self.kind,
            str(row.pk),
            self.token,
            message_id=message.message_id,
            now=handed_at,
            open_tracked=bool(getattr(message, "open_tracked", False)),
        ):
            with self._lock:
                self.summary.skipped += 1
            return False
        row.handed_off_at, row.message_id = handed_at, message.message_id  # as written
        return True

    def send(self, row: Any, message: Any) -> None:
        """Hand the row off and send it: over the next free connection (marked by its sender thread, or by
        this thread when the sender threads stay off the database), or here when the job has one transport."""
        if self.connections is None:
            if self.hand_off(row, message):
                self.recorder.result(row, self._provider_attempt(message, self.transports[0]), None)
        else:
            self.connections.submit(row, message, None if self.threaded else self.hand_off)
        self.recorder.pump()

    def _attempt(self, row: Any, message: Any, transport: Transport) -> tuple[Any, dt.datetime] | None:
        """On a sender thread: the hand-off mark (when this thread marks) and one provider attempt."""
        if self.threaded and not self.hand_off(row, message):
            return None
        return self._provider_attempt(message, transport)

    def _provider_attempt(self, message: Any, transport: Transport) -> tuple[Any, dt.datetime]:
        result = send_provider_attempt(
            transport,
            message,
            prior_attempts=self.prior.get(str(message.send_id), 0),
            retry_delays_ms=retry_delays_ms(transport.provider_type),
            clock=self.clock,
        )
        return result, self.now()

    # -- the end -------------------------------------------------------------------------------------------

    def hand_back(self, rest_rows: list[Any]) -> None:
        """Out of time budget: the rows not sent go back to the pool as a new job."""
        from delivery.services import sends_enqueue

        rest = [str(r.pk) for r in rest_rows]
        self.summary.released += release_claims(self.kind, rest, self.token)
        sends_enqueue(self.kind, rest)

    def finish(self, failed: bool) -> None:
        try:
            if self.connections is not None:
                self.connections.close()  # what was submitted goes out
        finally:
            for transport in self.transports:
                release_transport(transport)
            try:
                self.recorder.close()  # every result recorded (raises a sender's bug or a recording error)
            except Exception:
                if not failed:
                    raise
                logger.exception("could not record the last results of a failed %s job", self.kind)
            provider_health_flush()  # DLV-17: one write per provider and minute for the whole job
            if (
                self.held_rows
            ):  # a paused or cancelled campaign: unclaimed, not re-enqueued (resume does that)
                self.summary.released += release_claims(self.kind, self.held_rows, self.token)


def pool_name(kind: str) -> str:
    return "campaign" if kind == "campaign" else "transactional"


# How often a campaign job looks for other organizations' rows waiting (the fair pool, `PoolJob.let_in`): a
# campaign handed to the pool while every worker is in a job is let into those jobs within this.
FAIR_CHECK_SECONDS = 0.2
HOLD_CHECK_SECONDS = 1.0  # how often a campaign job asks whether its campaigns were paused or cancelled


class _Holds:
    """Whether a campaign row's campaign is paused or cancelled (`campaigns_on_hold`), asked once per
    `HOLD_CHECK_SECONDS` for the campaigns of the rows still to go: a pause takes effect within a second of the
    job's time, plus the rows already handed to the connections."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.checked = float("-inf")
        self.on_hold: set[str] = set()

    def held(self, row: Any, rest: list[Any]) -> bool:
        if self.clock() - self.checked >= HOLD_CHECK_SECONDS:
            self.on_hold = campaigns_on_hold({str(r.campaign_id) for r in rest})
            self.checked = self.clock()
        return str(row.campaign_id) in self.on_hold


def _defer_not_due(kind: str, ids: list[str], won: list[str], now: dt.datetime) -> int:
    """CMP-34: given rows this job could not claim because their not-before instant is still ahead (a job that
    ran early: a redelivery, an operator re-drive) go back to the pool as jobs due at that instant, so they
    leave then — not before, and not only when the orphan sweep finds them. Returns how many."""
    from delivery.services import sends_enqueue

    rest = set(ids) - set(won)
    due: dict[dt.datetime, list[str]] = {}
    rows = model_for(kind)._default_manager.filter(
        pk__in=list(rest), status=SendStatus.QUEUED, not_before__gt=now, claimed_at__isnull=True
    )
    for pk, not_before in rows.values_list("pk", "not_before"):
        due.setdefault(not_before, []).append(str(pk))
    for at, send_ids in due.items():
        sends_enqueue(kind, send_ids, at=at)
    return sum(len(v) for v in due.values())


def _compose(row: Any, contexts: dict[str, Any], mail_options: dict[str, Any]) -> Any:
    if row.ref_kind == "campaign":
        ctx = contexts.get(str(row.campaign_id))
        if ctx is None:
            raise ComposeError("WORKPOOL_FAILED", "Campaign send settings missing")
        return compose_campaign(row, ctx, postal_address=row.organization.postal_address or "")
    files = attachment_fetch.load_attachments(row) if row.kind == "transactional" else []
    if row.kind == "automation":
        return compose_transactional(
            row,
            options=mail_options.get(str(row.automation_id)),
            postal_address=row.organization.postal_address or "",
        )
    return compose_transactional(row, attachments=files)
