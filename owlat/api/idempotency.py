"""`Idempotency-Key` (API-11).

Records are keyed by (API key, header value) and keep a fingerprint: method, path without trailing slash and
the SHA-256 of the canonical JSON body (sorted keys, no whitespace; the raw bytes when unparseable).

- The first use claims the record (unique constraint, committed at once so concurrent requests see it).
  `ApiView` (`owlat.api.base`) then runs the handler in one transaction that first locks the record and finally stores the
  2xx/4xx status and body in it; a 5xx rolls the handler back and releases the claim.
- Same key and fingerprint → the stored response with `Idempotent-Replayed: true`; nothing runs twice.
- Same key, different fingerprint → 422 `idempotency_key_reused`.
- Same key while the first request still runs → 409 `idempotency_in_progress`, `Retry-After: 1`. A claim
  older than 60 s whose request is no longer running is abandoned and taken over.
- Records live 24 h from first use; `idempotency_purge_task` (hourly) deletes older ones.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from owlat.api.errors import ApiError
from owlat.models import ApiKey, IdempotencyRecord

HEADER = "Idempotency-Key"
META_KEY = "HTTP_IDEMPOTENCY_KEY"  # HEADER in `request.META` (what `request.headers[HEADER]` reads)
MAX_LENGTH = 255
IN_PROGRESS_TIMEOUT = dt.timedelta(seconds=60)
RETENTION = dt.timedelta(hours=24)
REPLAYED_HEADER = "Idempotent-Replayed"

KEY_REUSED_MESSAGE = "Idempotency-Key was already used with a different request"
IN_PROGRESS_MESSAGE = "A request with this Idempotency-Key is still being processed"
INVALID_HEADER_MESSAGE = "Invalid Idempotency-Key header"


def parse_idempotency_key(value: str | None) -> str | None:
    """The header value, None when absent; 1–255 printable ASCII characters, else 400."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_LENGTH or any(not (0x20 <= ord(ch) <= 0x7E) for ch in value):
        raise ApiError(
            "invalid_input",
            INVALID_HEADER_MESSAGE,
            {"field": HEADER, "fields": {HEADER: [INVALID_HEADER_MESSAGE]}},
        )
    return value


def canonical_body_hash(body: bytes) -> str:
    try:
        value = json.loads(body.decode("utf-8")) if body.strip() else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        return hashlib.sha256(body).hexdigest()
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_fingerprint(*, method: str, path: str, body: bytes) -> str:
    normalized_path = path[:-1] if path.endswith("/") and len(path) > 1 else path
    material = f"{method.upper()}\n{normalized_path}\n{canonical_body_hash(body)}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


@dataclass
class Begin:
    """Either a claim to run the request (`record` is ours) or a stored response to replay."""

    record: IdempotencyRecord
    replay: bool

    @property
    def claimed_at(self) -> dt.datetime:
        return self.record.created_at


def _key_reused() -> ApiError:
    return ApiError("invalid_state", KEY_REUSED_MESSAGE, {"reason": "idempotency_key_reused"})


def _in_progress() -> ApiError:
    return ApiError(
        "conflict",
        IN_PROGRESS_MESSAGE,
        {"reason": "idempotency_in_progress"},
        headers={"Retry-After": "1"},
    )


def idempotency_begin(
    *, api_key: ApiKey, key: str, fingerprint: str, now: dt.datetime | None = None
) -> Begin:
    """Claim (api_key, key) or find what to answer instead; raises 422/409 per API-11."""
    for _ in range(5):
        current = now or timezone.now()
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    api_key=api_key, key=key, fingerprint=fingerprint, completed=False
                )
            return Begin(record=record, replay=False)
        except IntegrityError:
            pass
        found = IdempotencyRecord.objects.filter(api_key=api_key, key=key).first()
        if found is None:  # released or purged meanwhile: try to claim again
            continue
        record = found
        if record.created_at < current - RETENTION:
            IdempotencyRecord.objects.filter(pk=record.pk, created_at=record.created_at).delete()
            continue
        if record.fingerprint != fingerprint:
            raise _key_reused()
        if record.completed:
            return Begin(record=record, replay=True)
        if record.created_at >= current - IN_PROGRESS_TIMEOUT:
            raise _in_progress()
        # Abandoned claim: take it over. A request still running holds the row lock, so this UPDATE
        # waits for it and then matches nothing (the row is completed or gone) — and we look again.
        taken = IdempotencyRecord.objects.filter(
            pk=record.pk, completed=False, created_at=record.created_at
        ).update(created_at=current)
        if taken:
            record.created_at = current
            return Begin(record=record, replay=False)
    raise _in_progress()


def idempotency_lock(begin: Begin) -> bool:
    """Inside the handler's transaction: lock our claim; False if it is no longer ours."""
    return (
        IdempotencyRecord.objects.select_for_update()
        .filter(pk=begin.record.pk, completed=False, created_at=begin.claimed_at)
        .exists()
    )


def idempotency_complete(begin: Begin, *, status: int, body: Any) -> None:
    """Store the response (call inside the handler's transaction, so both commit together)."""
    IdempotencyRecord.objects.filter(pk=begin.record.pk).update(
        completed=True, response_status=status, response_body=body
    )


def idempotency_release(begin: Begin) -> None:
    """A 5xx: drop the claim so a retry runs the request again."""
    IdempotencyRecord.objects.filter(
        pk=begin.record.pk, completed=False, created_at=begin.claimed_at
    ).delete()


def idempotency_purge(*, now: dt.datetime | None = None) -> int:
    cutoff = (now or timezone.now()) - RETENTION
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def idempotency_purge_task() -> str:
    """Hourly: delete idempotency records older than 24 h (API-11)."""
    return f"purged {idempotency_purge()} idempotency records"
