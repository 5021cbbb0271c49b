"""D-07 claims and hand-off: compare-and-set writes of the claim fields; they never write `status`."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from delivery.lifecycle import sql
from delivery.lifecycle.effects import _run_completion
from delivery.lifecycle.refs import claim_lease, model_for, orphan_after, redrive_lease
from delivery.models import SendStatus as S

logger = logging.getLogger(__name__)


def claim_sends(
    kind: str,
    ids: Iterable[str],
    *,
    now: dt.datetime | None = None,
    lease: dt.timedelta | None = None,
    token: uuid.UUID | None = None,
    retry_token: uuid.UUID | None = None,
) -> tuple[uuid.UUID, list[str]]:
    """Claim the given rows that are still `queued`, not handed off and not under a live claim. Returns the
    claim token and the ids this caller won; a row is never claimed by two callers at once. A row parked for
    a provider retry (`park_for_retry`) is claimable only by the job carrying its `retry_token` (or by anyone
    once that parking has run past the lease)."""
    model = model_for(kind)
    now = now or timezone.now()
    lease = lease or claim_lease()
    token = token or uuid.uuid4()
    id_list = [uuid.UUID(str(i)) for i in ids]
    if not id_list:
        return token, []
    expired = now - lease
    if connection.vendor == "postgresql":
        won = sql.claim_given(model, id_list, now=now, token=token, expired=expired, retry_token=retry_token)
        return token, won
    # SQLite form (D-16): writers are serialized (IMMEDIATE transactions), so a conditional UPDATE is a CAS.
    claimable = Q(claimed_at__isnull=True) | Q(claimed_at__lt=expired)
    if retry_token is not None:
        claimable |= Q(claim_token=retry_token)
    with transaction.atomic():
        model._default_manager.filter(
            claimable,
            _due(now),
            pk__in=id_list,
            status=S.QUEUED,
            handed_off_at__isnull=True,
            deleted_at__isnull=True,
        ).update(claimed_at=now, claim_token=token, dispatch_attempts=F("dispatch_attempts") + 1)
        won = [
            str(pk) for pk in model._default_manager.filter(claim_token=token).values_list("pk", flat=True)
        ]
    return token, won


def claim_sends_topped_up(
    kind: str,
    ids: Iterable[str],
    *,
    limit: int,
    token: uuid.UUID,
    retry_token: uuid.UUID | None = None,
    now: dt.datetime | None = None,
    lease: dt.timedelta | None = None,
) -> tuple[list[str], list[str]]:
    """PostgreSQL: `claim_sends` of the given rows and `claim_queued` of up to `limit - len(ids)` other queued
    rows (oldest first) under `token`, in one statement; returns (the given rows won, the rows topped up). Each
    part claims exactly the rows its own function would (the top-up never takes a given row), rows another
    claimer holds are skipped, never waited for."""
    model = model_for(kind)
    now = now or timezone.now()
    expired = now - (lease or claim_lease())
    id_list = [uuid.UUID(str(i)) for i in ids]
    more = max(0, limit - len(id_list))
    rows = sql.claim_given_and_queued(
        model, id_list, more=more, now=now, token=token, expired=expired, retry_token=retry_token
    )
    won = sorted(str(pk) for pk, given in rows if given)
    return won, [str(pk) for pk, given in rows if not given]


def claim_queued(
    kind: str,
    token: uuid.UUID,
    *,
    limit: int,
    exclude: Iterable[str] = (),
    now: dt.datetime | None = None,
    lease: dt.timedelta | None = None,
) -> list[str]:
    """Claim up to `limit` more claimable queued rows of `kind`, oldest first, under an existing claim token
    (the transactional pool's jobs top their batch up with rows whose own job has not run yet). Uses the
    partial index on queued rows; on PostgreSQL rows another worker is claiming are skipped, not waited for."""
    if limit <= 0:
        return []
    model = model_for(kind)
    now = now or timezone.now()
    expired = now - (lease or claim_lease())
    skip = [uuid.UUID(str(i)) for i in exclude]
    if connection.vendor == "postgresql":
        return sql.claim_queued(model, limit=limit, skip=skip, now=now, token=token, expired=expired)
    with transaction.atomic():
        candidates = list(
            model._default_manager.filter(
                Q(claimed_at__isnull=True) | Q(claimed_at__lt=expired),
                _due(now),
                status=S.QUEUED,
                handed_off_at__isnull=True,
                deleted_at__isnull=True,
                outcome_unknown=False,
                queued_at__lte=now,
            )
            .exclude(pk__in=skip)
            .order_by("queued_at")
            .values_list("pk", flat=True)[:limit]
        )
        model._default_manager.filter(
            Q(claimed_at__isnull=True) | Q(claimed_at__lt=expired), pk__in=candidates, status=S.QUEUED
        ).update(claimed_at=now, claim_token=token, dispatch_attempts=F("dispatch_attempts") + 1)
        return [
            str(pk)
            for pk in model._default_manager.filter(pk__in=candidates, claim_token=token).values_list(
                "pk", flat=True
            )
        ]


def _due(now: dt.datetime) -> Q:
    """CMP-34: a row with a not-before instant is handed out by nobody (job, top-up, sweep, retry) earlier."""
    return Q(not_before__isnull=True) | Q(not_before__lte=now)


def _orphans(kind: str, now: dt.datetime, older_than: dt.timedelta | None = None) -> Any:
    """A never-claimed row is orphaned `orphan_after(kind)` after it was queued or, delayed on purpose
    (CMP-34), after its not-before instant: its own job is due then, not before."""
    model = model_for(kind)
    cutoff = now - (older_than or orphan_after(kind))
    unclaimed = Q(claimed_at__isnull=True, queued_at__lt=cutoff) & (
        Q(not_before__isnull=True) | Q(not_before__lt=cutoff)
    )
    return (
        model._default_manager.filter(status=S.QUEUED, handed_off_at__isnull=True, deleted_at__isnull=True)
        .filter(unclaimed | Q(claimed_at__lt=now - claim_lease()))
        .filter(Q(redriven_at__isnull=True) | Q(redriven_at__lt=now - redrive_lease(kind)))
    )


def claim_orphans(
    kind: str, *, limit: int = 100, now: dt.datetime | None = None, older_than: dt.timedelta | None = None
) -> list[str]:
    """Ids of queued rows that no live job holds: never claimed for longer than `orphan_after(kind)`, or
    claimed but not handed off under a claim nobody renewed for the lease (uses the partial index on queued
    rows) — and not handed out again by the sweep within `redrive_lease(kind)`. Read-only (a dry run);
    `lease_orphans` is what the sweep re-drives."""
    now = now or timezone.now()
    qs = _orphans(kind, now, older_than)
    return [str(pk) for pk in qs.order_by("pk").values_list("pk", flat=True)[:limit]]


def lease_orphans(kind: str, *, limit: int = 100, now: dt.datetime | None = None) -> list[str]:
    """`claim_orphans`, leased for the caller to hand to the pool: the rows returned are marked re-driven now
    (`redriven_at`), in one transaction with the rows locked (a concurrent sweep on another host skips them),
    so no sweep hands them out again before `redrive_lease(kind)` runs out, however long their queue stays
    stuck. Not a claim: the job the caller enqueues claims the rows by compare-and-set as any job does, so a
    duplicate job is still harmless."""
    model = model_for(kind)
    now = now or timezone.now()
    with transaction.atomic():
        qs = _orphans(kind, now)
        if connection.features.has_select_for_update_skip_locked:
            qs = qs.select_for_update(skip_locked=True)
        ids = list(qs.order_by("pk").values_list("pk", flat=True)[:limit])
        if ids:
            model._default_manager.filter(pk__in=ids).update(redriven_at=now)
    return [str(pk) for pk in ids]


def renew_claims(kind: str, token: uuid.UUID, *, now: dt.datetime | None = None) -> int:
    """Keep the claim of a live job: move `claimed_at` of its still-`queued` rows (handed off or not) to now."""
    model = model_for(kind)
    return model._default_manager.filter(claim_token=token, status=S.QUEUED).update(
        claimed_at=now or timezone.now()
    )


class ClaimKeeper:
    """Renews a job's claim from a thread of its own while the job runs (`with ClaimKeeper(kind, token):`),
    every `SEND_CLAIM_RENEW_SECONDS`, so a claim outlives a slow batch but not the process holding it: a
    killed worker's rows are recognised after `SEND_CLAIM_LEASE_SECONDS`, not after minutes."""

    def __init__(self, kind: str, token: uuid.UUID, *, every: float | None = None) -> None:
        from django.conf import settings

        self.kind = kind
        self.token = token
        self.every = every if every is not None else float(settings.SEND_CLAIM_RENEW_SECONDS)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="owlat-claim-keeper", daemon=True)

    def __enter__(self) -> ClaimKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        from django.db import connection as thread_connection

        try:
            while not self._stop.wait(self.every):
                try:
                    renew_claims(self.kind, self.token)
                except Exception:  # a dropped connection: the next round opens a new one
                    logger.warning("could not renew the claim of a %s batch", self.kind, exc_info=True)
                    thread_connection.close()
        finally:
            thread_connection.close()


def release_claims(kind: str, ids: Iterable[str], token: uuid.UUID) -> int:
    """Give back claimed rows that were not handed off (a batch ran out of time)."""
    model = model_for(kind)
    return model._default_manager.filter(
        pk__in=list(ids), claim_token=token, handed_off_at__isnull=True, status=S.QUEUED
    ).update(claimed_at=None, claim_token=None)


def park_for_retry(kind: str, send_id: str, token: uuid.UUID, *, until: dt.datetime) -> uuid.UUID | None:
    """A provider refused the message before accepting it (retryable): undo the hand-off and
    park the row under a fresh retry token with `claimed_at = until`, so no other job (batch top-up, orphan
    sweep) takes it before its retry is due; the due task carrying that token claims it (`claim_sends`). If
    the due task is lost, the orphan sweep re-drives the row one lease after `until`. Returns the retry
    token, or None when this job no longer holds the row."""
    model = model_for(kind)
    retry_token = uuid.uuid4()
    updated = model._default_manager.filter(
        pk=send_id, claim_token=token, status=S.QUEUED, handed_off_at__isnull=False, outcome_unknown=False
    ).update(handed_off_at=None, claim_token=retry_token, claimed_at=until)
    return retry_token if updated else None


def mark_handed_off(
    kind: str,
    send_id: str,
    token: uuid.UUID,
    *,
    message_id: str,
    now: dt.datetime | None = None,
    open_tracked: bool | None = None,
) -> bool:
    """Set `handed_off_at` (and whether the message carries the open pixel) just before the message goes on
    the wire; False when the claim was lost. One statement per message, so it is written without the ORM's
    per-call query compilation."""
    model = model_for(kind)
    pk = uuid.UUID(str(send_id))
    at = now or timezone.now()
    if connection.vendor == "postgresql":
        return sql.mark_handed_off(model, pk, token, at=at, message_id=message_id, open_tracked=open_tracked)
    return bool(
        model._default_manager.filter(
            pk=pk, claim_token=token, handed_off_at__isnull=True, status=S.QUEUED
        ).update(handed_off_at=at, message_id=message_id, open_tracked=open_tracked)
    )


def mark_handed_off_many(
    kind: str, items: Iterable[tuple[str, str]], token: uuid.UUID, *, now: dt.datetime | None = None
) -> set[str]:
    """`mark_handed_off` for a group of rows about to go on the wire over the job's connections, in one
    statement: `items` are (send id, message id); returns the ids still held by `token` (now handed off)."""
    items = list(items)
    if not items:
        return set()
    model = model_for(kind)
    at = now or timezone.now()
    if connection.vendor != "postgresql":
        return {
            pk
            for pk, message_id in items
            if model._default_manager.filter(
                pk=pk, claim_token=token, handed_off_at__isnull=True, status=S.QUEUED
            ).update(handed_off_at=at, message_id=message_id)
        }
    return sql.mark_handed_off_many(model, items, token, at=at)


def mark_outcome_unknown(kind: str, send_id: str, *, error_code: str, error_message: str) -> bool:
    """D-07: the message may have been accepted; keep the row `queued`, flagged, never re-sent automatically.
    An outcome-unknown row counts as finished for campaign completion (CMP-13), so the completion handlers
    run as for a row that left `queued`."""
    model = model_for(kind)
    with transaction.atomic():
        updated = model._default_manager.filter(
            pk=send_id, status=S.QUEUED, handed_off_at__isnull=False, outcome_unknown=False
        ).update(outcome_unknown=True, error_code=error_code, error_message=error_message)
        if updated:
            send = model._default_manager.filter(pk=send_id).first()
            if send is not None:
                _run_completion(send)
    return bool(updated)


def reset_for_resend(kind: str, send_id: str) -> bool:
    """Operator re-send of an outcome-unknown row (D-07, `resend_unknown`): clear hand-off and claim."""
    model = model_for(kind)
    return bool(
        model._default_manager.filter(pk=send_id, status=S.QUEUED, outcome_unknown=True).update(
            outcome_unknown=False,
            handed_off_at=None,
            claimed_at=None,
            claim_token=None,
            error_code=None,
            error_message=None,
        )
    )


def cancel_campaign_queued(campaign_id: Any, *, now: dt.datetime | None = None) -> int:
    """A cancelled campaign's rows that never reached the wire (`queued`, not handed off) end `cancelled`, in
    one compare-and-set statement (a row a live job is about to hand off loses its hand-off mark instead; a row
    handed off keeps its outcome). The only bulk status write of the send tables; no effects (nothing was sent,
    no counter moves). Returns how many."""
    from delivery.models import EmailSend

    return EmailSend.objects.filter(
        campaign_id=campaign_id, status=S.QUEUED, handed_off_at__isnull=True, deleted_at__isnull=True
    ).update(status=S.CANCELLED, failed_at=now or timezone.now(), error_code="CAMPAIGN_CANCELLED")
