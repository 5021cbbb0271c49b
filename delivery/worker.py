"""The pool worker (DLV-15 … DLV-18 as refined by D-06, D-07, D-08).

`dispatch_batch(kind, ids)` is what one pool job does: claim each given row on its own (rows another worker
holds, or that already left `queued`, are skipped), compose, re-check suppression, take a pacing token, mark
the hand-off, make one attempt through `send_provider_attempt` over one of the job's provider connections
(`DELIVERY_SMTP_CONNECTIONS` SMTP connections at once, a sender thread each, issue 12), and record every
result through the send lifecycle (batched, so counters and completion handlers are merged per campaign; in a
recorder thread of its own, delivery.pipeline). A
retryable refusal is parked and handed to the pool as a due task after the provider's delay (issue 12 item 5);
the job never sleeps between attempts, and checks its time budget before each row and while it waits for a
pacing token. A transactional job tops its batch up with queued rows whose own job has not run yet and, while
the pool has a backlog, goes on with it a round of `BATCH_SIZE` rows at a time (`DRAIN_SECONDS`), so a backlog
of automation mail is not sent as cold 100-row jobs.

A row is dispatched at most once: the claim is a compare-and-set, the hand-off mark is a compare-and-set on the
claim token, and a row handed off without a result stays `queued` and flagged outcome-unknown, never re-sent
automatically (`reap_stuck_sends` resolves it after 24 hours; `resend_unknown` is the explicit operator path).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from delivery import attachments as attachment_fetch
from delivery import profiling
from delivery.compose import ComposeError, compose_campaign, compose_transactional
from delivery.dispatch import send_provider_attempt
from delivery.health import provider_health_flush
from delivery.lifecycle import (
    UNKNOWN_OUTCOME_DEADLINE,
    ClaimKeeper,
    SendRef,
    campaigns_on_hold,
    claim_lease,
    claim_orphans,
    claim_queued,
    claim_sends,
    claim_sends_topped_up,
    lease_orphans,
    mark_handed_off_many,
    mark_outcome_unknown,
    model_for,
    release_claims,
    send_transition,
)
from delivery.models import SendStatus
from delivery.pacing import Pacer, take_pool_token
from delivery.pipeline import Marker, Recorder, Senders
from delivery.providers import (
    AMBIGUOUS_TIMEOUT,
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
# Compose and mark the next rows while the previous messages are on the wire (delivery.pipeline): the job's
# thread claims, composes and marks the hand-off (one statement and commit per HANDOFF_GROUP rows), a sender
# thread per connection sends, and a recorder thread records the results (RESULT_FLUSH_SIZE rows per
# transaction). At most OUTBOX handed-off messages wait for a connection and one is in flight per connection, so
# a crash leaves at most HANDOFF_GROUP + OUTBOX + connections rows outcome-unknown that never reached the wire
# (D-07: flagged, never re-sent automatically), besides the sent rows whose result was not recorded yet.
PIPELINE = True
HANDOFF_GROUP = 10
OUTBOX = 10  # handed-off messages waiting for a free connection
RESULT_FLUSH_SIZE = 50  # results are recorded in one transaction per this many rows
RECORD_INLINE_ROWS = 10  # a job with at most this many rows (per round) records without a recorder thread
# Below the django-q2 timeout (120 s) minus one SMTP timeout (30 s): checked before each row and while waiting
# for a pacing token; the rest is handed to a new job. Provider retries never sleep here (issue 12 item 5).
BATCH_TIME_BUDGET_SECONDS = 80.0
# A transactional job that finished its rows goes on with the pool's next queued rows (BATCH_SIZE per round,
# claimed like the top-up, as long as the last claim found all it asked for) over the same connections while
# it is younger than this: a backlog of automation
# mail is drained without a cold start (threads, connections, broker hop) per 100 rows (issue 12).
DRAIN_SECONDS = 20.0
UNCONFIRMED_CODE = "PROVIDER_ACCEPTANCE_UNCONFIRMED"


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
    run = functools.partial(
        _dispatch_batch,
        kind,
        ids,
        token=token,
        retry_token=uuid.UUID(retry_token) if retry_token else None,
        prior_attempts=attempts if retry_token else 0,
        **options,
    )
    with ClaimKeeper(kind, token):
        if not profiling.enabled():
            return run()
        summary: BatchSummary | None = None
        with profiling.job(lambda: summary.claimed if summary else 0):
            summary = run()
        return summary


def _dispatch_batch(
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
) -> BatchSummary:
    summary = BatchSummary(kind=kind, requested=len(ids))
    backlog = True  # whether the pool may have more queued rows for the drain (see DRAIN_SECONDS)
    top_up = drain and kind == "transactional" and len(ids) < BATCH_SIZE
    if top_up and connection.vendor == "postgresql":
        # The batch's rows and a top-up with queued rows whose own job has not run yet, in one statement.
        won, topped = claim_sends_topped_up(
            kind, ids, limit=BATCH_SIZE, token=token, retry_token=retry_token, now=now()
        )
        summary.skipped = len(ids) - len(won)
        prior = dict.fromkeys(won, prior_attempts) if retry_token is not None else {}
        backlog = len(topped) == BATCH_SIZE - len(ids)
        won += topped
    else:
        token, won = claim_sends(kind, ids, token=token, retry_token=retry_token, now=now())
        summary.skipped = len(ids) - len(won)
        prior = dict.fromkeys(won, prior_attempts) if retry_token is not None else {}
        if top_up and len(won) < BATCH_SIZE:
            # Top the batch up with queued rows whose own job has not run yet (one connection, one flush).
            wanted = BATCH_SIZE - len(won)
            topped = claim_queued(kind, token, limit=wanted, exclude=won)
            won += topped
            backlog = len(topped) == wanted
    if summary.skipped:
        _defer_not_due(kind, ids, won, now())
    summary.claimed = len(won)
    if not won:
        return summary
    shared_cache: dict[Any, dict[Any, Any]] = {}
    current = read_round(kind, won, token, shared_cache, join=len(won) <= RECORD_INLINE_ROWS)
    pool = "campaign" if kind == "campaign" else "transactional"
    pace = pacer if pacer is not None else Pacer(pool, sleep=sleep)
    if not delivery_configured():
        recorder = Recorder(kind, token, summary, now=now, flush_size=RESULT_FLUSH_SIZE, threaded=False)
        for row in current.rows:
            recorder.failed(
                row, error_code="WORKPOOL_FAILED", error_message="No delivery provider configured"
            )
        recorder.close()
        return summary

    # A recorder thread with its own database connection, unless the job runs inside a caller's transaction
    # (whose rows another connection would not see) or on SQLite (one writer at a time).
    # Started once the job has more than RECORD_INLINE_ROWS rows (a round's): a small job records its results
    # itself at the end, without a thread and a database connection of its own.
    threaded = PIPELINE and connection.vendor == "postgresql" and not connection.in_atomic_block
    recorder = Recorder(kind, token, summary, now=now, flush_size=RESULT_FLUSH_SIZE, threaded=False)
    transports: list[Transport] = []
    senders: Senders | None = None
    # Composed rows that took their pacing token, handed off together (one statement, HANDOFF_GROUP rows at
    # most) just before they go to the connections: by the job's thread, or, once the recorder has its thread,
    # from the second group on by a marker thread while the job's thread composes the next group.
    ready: list[tuple[Any, Any]] = []
    marker: Marker | None = None
    handed_groups = 0

    def send(message: Any, transport: Transport) -> tuple[Any, dt.datetime]:
        result = send_provider_attempt(
            transport,
            message,
            prior_attempts=prior.get(str(message.send_id), 0),
            retry_delays_ms=retry_delays_ms(transport.provider_type),
            clock=clock,
        )
        return result, now()

    def dispatch_ready() -> None:
        """Hand the ready rows off (`hand_off`), here or through the marker thread."""
        nonlocal marker, handed_groups
        if not ready:
            return
        group = list(ready)
        ready.clear()
        handed_groups += 1
        if marker is None and handed_groups > 1 and senders is not None and recorder.threaded:
            marker = Marker(hand_off)
        if marker is not None:
            marker.put(group)
        else:
            hand_off(group)
        recorder.pump()

    def hand_off(group: list[tuple[Any, Any]]) -> None:
        """Mark the group's rows handed off (one statement, committed before any goes on the wire; D-07) and
        give the rows still held to the connections (or send them here)."""
        handed_at = now()
        held = mark_handed_off_many(
            kind, [(str(row.pk), message.message_id) for row, message in group], token, now=handed_at
        )
        for row, message in group:
            if str(row.pk) not in held:
                summary.skipped += 1  # the claim was lost (lease ran out and another worker took it)
                continue
            row.handed_off_at, row.message_id = handed_at, message.message_id  # as written
            if senders is None:
                recorder.result(row, send(message, transports[0]), None)
            else:
                senders.put(row, message)

    def hand_back(rest_rows: list[Any]) -> None:
        """Out of time budget: what took its token goes out, the rest goes back to the pool as a new job."""
        dispatch_ready()
        rest = [str(r.pk) for r in rest_rows]
        summary.released += release_claims(kind, rest, token)
        from delivery.services import sends_enqueue

        sends_enqueue(kind, rest)

    def run_round(round_: Round) -> bool:
        """Check, compose, pace and hand off one round's rows; False when the job ran out of time (the rest
        went back to the pool)."""
        nonlocal senders
        rows = round_.rows
        if threaded and len(rows) > RECORD_INLINE_ROWS:
            recorder.start_thread()
        for index, row in enumerate(rows):
            if clock() - started > BATCH_TIME_BUDGET_SECONDS:
                hand_back(rows[index:])
                return False
            if holds is not None and holds.held(row, rows[index:]):
                held_rows.append(str(row.pk))
                continue
            refusal = round_.refusal(row)
            if refusal is not None:
                recorder.failed(row, error_code=SUPPRESSED_CODE, error_message=refusal)
                continue
            try:
                message = _compose(row, round_.contexts, round_.mail_options)
            except ComposeError as exc:
                recorder.failed(row, error_code=exc.code, error_message=exc.message)
                continue
            except attachment_fetch.AttachmentError as exc:
                recorder.failed(row, error_code="ATTACHMENT_FETCH_FAILED", error_message=str(exc))
                continue
            if not transports:
                try:
                    transports.append(transport_factory())
                except DispatchError as exc:
                    recorder.failed(row, error_code="WORKPOOL_FAILED", error_message=exc.message)
                    continue
                if PIPELINE and transports[0].provider_type != "local":
                    wanted = connections or (
                        smtp_connections() if transports[0].provider_type == "smtp" else 1
                    )
                    while len(transports) < min(wanted, len(rows) - index):
                        transports.append(transport_factory())
                    senders = Senders(transports, send, recorder.result, outbox=OUTBOX)
            # This attempt's token (D-06), taken before the hand-off mark, within the job's time budget; when
            # none is free right now, what is composed goes out first.
            if not take_pool_token(pace, 0.0):
                dispatch_ready()
                if not take_pool_token(pace, BATCH_TIME_BUDGET_SECONDS - (clock() - started)):
                    hand_back(rows[index:])
                    return False
            ready.append((row, message))
            if len(ready) >= HANDOFF_GROUP:
                dispatch_ready()
        return True

    holds = _Holds(clock) if kind == "campaign" else None
    held_rows: list[str] = []
    started = clock()
    failed = False
    try:
        while run_round(current) and drain and kind == "transactional":
            # Drain (issue 12): while the pool has queued rows and the job is young, claim the next group and
            # go on over the same connections, sender threads and recorder, composing it while the previous
            # group is still on the wire, instead of ending the job and starting the next one cold.
            dispatch_ready()
            if not backlog or clock() - started > DRAIN_SECONDS:
                break  # the last claim found fewer rows than it asked for: rows queued since have their jobs
            more = claim_queued(kind, token, limit=BATCH_SIZE, now=now())
            backlog = len(more) == BATCH_SIZE
            if not more:
                break
            summary.claimed += len(more)
            current = read_round(kind, more, token, shared_cache, join=len(more) <= RECORD_INLINE_ROWS)
        dispatch_ready()
        if marker is not None:
            marker.close()  # every group handed off; raises the marker's failure
    except BaseException:
        failed = True
        raise
    finally:
        try:
            if marker is not None:
                marker.close(raise_error=False)  # a failed job's groups put are handed off first
            if senders is not None:
                senders.close()  # what is in the outbox goes out
        finally:
            for transport in transports:
                release_transport(transport)
            try:
                recorder.close()  # every result recorded (raises a sender's bug or a recording error)
            except Exception:
                if not failed:
                    raise
                logger.exception("could not record the last results of a failed %s job", kind)
            provider_health_flush()  # DLV-17: one write per provider and minute for the whole job
            if held_rows:  # a paused or cancelled campaign: unclaimed, not re-enqueued (resume does that)
                summary.released += release_claims(kind, held_rows, token)
    return summary


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


# --- recovery (D-07) ----------------------------------------------------------------------------------------


def _not_on_hold(send_ids: list[str]) -> list[str]:
    """The campaign rows among `send_ids` whose campaign is not paused or cancelled: the sweep leaves a paused
    campaign's rows where they are (its resume hands them out)."""
    from delivery.models import EmailSend

    pairs = list(EmailSend.objects.filter(pk__in=send_ids).values_list("pk", "campaign_id"))
    held = campaigns_on_hold({str(c) for _, c in pairs})
    return [str(pk) for pk, c in pairs if str(c) not in held]


@dataclass
class ReapReport:
    orphans: dict[str, list[str]] = field(default_factory=dict)
    lost_hand_offs: dict[str, list[str]] = field(default_factory=dict)
    expired_unknown: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {
            "orphans": sum(len(v) for v in self.orphans.values()),
            "lost_hand_offs": sum(len(v) for v in self.lost_hand_offs.values()),
            "expired_unknown": sum(len(v) for v in self.expired_unknown.values()),
        }


def reap_stuck_sends(*, apply: bool, now: dt.datetime | None = None, limit: int = 1000) -> ReapReport:
    """D-07 recovery:
    - queued rows no live job holds (never claimed for `orphan_after(kind)`, or claimed without hand-off under
      a claim nobody renewed for `SEND_CLAIM_LEASE_SECONDS`) are handed to their pool again (they were never
      on the wire), each once per `redrive_lease(kind)` (`lease_orphans`) while its queue consumes nothing;
    - rows handed off without a recorded result under such a dead claim are flagged outcome-unknown (never
      re-sent);
    - outcome-unknown rows older than 24 hours become `failed` `PROVIDER_ACCEPTANCE_UNCONFIRMED`.
    Dry run unless `apply`."""
    from delivery.services import sends_enqueue

    now = now or timezone.now()
    report = ReapReport()
    for kind in ("campaign", "transactional"):
        model = model_for(kind)
        if apply:  # leased and handed to the pool in one transaction
            with transaction.atomic():
                orphans = lease_orphans(kind, limit=limit, now=now)
                if orphans and kind == "campaign":
                    orphans = _not_on_hold(orphans)
                if orphans:
                    sends_enqueue(kind, orphans)
        else:
            orphans = claim_orphans(kind, limit=limit, now=now)
        report.orphans[kind] = orphans
        lost = [
            str(pk)
            for pk in model.objects.filter(
                status=SendStatus.QUEUED,
                handed_off_at__isnull=False,
                outcome_unknown=False,
                claimed_at__lt=now - claim_lease(),
            ).values_list("pk", flat=True)[:limit]
        ]
        report.lost_hand_offs[kind] = lost
        expired = [
            str(pk)
            for pk in model.objects.filter(
                status=SendStatus.QUEUED,
                outcome_unknown=True,
                handed_off_at__lt=now - UNKNOWN_OUTCOME_DEADLINE,
            ).values_list("pk", flat=True)[:limit]
        ]
        report.expired_unknown[kind] = expired
        if not apply:
            continue
        for pk in lost:
            mark_outcome_unknown(
                kind,
                pk,
                error_code=AMBIGUOUS_TIMEOUT,
                error_message="The worker stopped after hand-off; provider acceptance unknown",
            )
        for pk in expired:
            send_transition(
                SendRef(kind, pk),  # type: ignore[arg-type]
                SendStatus.FAILED,
                {
                    "at": now,
                    "error_code": UNCONFIRMED_CODE,
                    "error_message": "The provider never confirmed acceptance within 24 hours",
                },
            )
    return report
