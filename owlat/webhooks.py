"""Customer webhooks (spec DOM-18): an outbox written in the cause's transaction, delivered asynchronously.

`webhook_emit()` writes one `WebhookDelivery` row per active endpoint of the organization subscribed to the
event (an endpoint with an empty `events` list receives every event) and enqueues `webhook_deliver_task` for
each, inside the caller's transaction: a rolled-back cause emits nothing.

Wire format of one delivery (an HTTP POST to the endpoint URL):

    Content-Type: application/json
    User-Agent: Owlat-Webhooks/1
    X-Owlat-Event: <event type, e.g. contact.created>
    X-Owlat-Delivery: <delivery id; the same on every retry of this delivery>
    X-Owlat-Timestamp: <Unix seconds when this attempt was signed>
    X-Owlat-Signature: v1=<hex HMAC-SHA256(endpoint secret, "<X-Owlat-Timestamp>.<raw body>")>

    {"id": "<event id, shared by every endpoint receiving this event>", "type": "<event type>",
     "createdAt": "<ISO 8601>", "data": {...event payload...}}

A receiver recomputes the HMAC over the timestamp, a dot and the raw request body with its endpoint secret and
compares it in constant time (`webhook_verify_signature`), rejects stale timestamps (replay protection; the
tolerance is the receiver's choice) and de-duplicates on `id`, because delivery is at least once.

Endpoint URLs are tenant-entered: the model field validates them with `owlat.outbound` (save time) and every
attempt connects through its guarded session (connect time, IP pinned); a refused target is logged as
"Refused: <reason>" without ever being contacted.

Attempts: immediately, then after each of `settings.WEBHOOK_RETRY_DELAYS_SECONDS` (default 60 s and 300 s) — 3
attempts in all. A 2xx answer marks the delivery `succeeded`; anything else (other status, timeout of
`settings.WEBHOOK_TIMEOUT_SECONDS`, connection error) is logged as a `WebhookAttempt` and retried, and after the
last attempt the delivery is `failed`. Each attempt is claimed with a compare-and-set on the attempt counter, and
the claim holds `next_attempt_at` as an in-flight lease, so two executions of the task never both POST.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import time
import uuid
from typing import Any

import requests
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from owlat import outbound
from owlat.jobs import enqueue
from owlat.models import WebhookAttempt, WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint

logger = logging.getLogger(__name__)

WEBHOOK_EVENT_TYPES = (
    "contact.created",
    "email.sent",
    "email.delivered",
    "email.opened",
    "email.clicked",
    "email.bounced",
    "email.complained",
    "topic.unsubscribed",
)
SIGNATURE_VERSION = "v1"
#: How long a claimed attempt may be in flight before the recovery sweep may start another one.
IN_FLIGHT_MARGIN_SECONDS = 30
#: A task that runs this much before its attempt is due still takes it (clock skew between hosts).
DUE_SLACK = dt.timedelta(seconds=2)
USER_AGENT = "Owlat-Webhooks/1"
DELIVER_TASK = "owlat.webhooks.webhook_deliver_task"


def total_attempts() -> int:
    return 1 + len(settings.WEBHOOK_RETRY_DELAYS_SECONDS)


def endpoint_wants(endpoint: WebhookEndpoint, event_type: str) -> bool:
    events = endpoint.events or []
    return not events or event_type in events


def webhook_emit(*, organization_id: Any, event_type: str, payload: dict[str, Any]) -> list[WebhookDelivery]:
    """Record `event_type` for every subscribed active endpoint of the organization and enqueue delivery.

    Runs inside the caller's transaction (the outbox rows and the queued tasks commit or roll back with the
    cause). `payload` must be JSON-serializable. Returns the delivery rows written (possibly none).
    """
    if event_type not in WEBHOOK_EVENT_TYPES:
        raise ValueError(f"unknown webhook event type {event_type!r}")
    endpoints = [
        ep
        for ep in WebhookEndpoint.objects.filter(organization_id=organization_id, is_active=True).order_by(
            "created_at"
        )
        if endpoint_wants(ep, event_type)
    ]
    if not endpoints:
        return []
    event_id = uuid.uuid4()
    deliveries = []
    for endpoint in endpoints:
        delivery = WebhookDelivery.objects.create(
            organization_id=organization_id,
            endpoint=endpoint,
            event_id=event_id,
            event_type=event_type,
            payload=payload,
        )
        enqueue(DELIVER_TASK, str(delivery.pk))
        deliveries.append(delivery)
    return deliveries


# --- signing ----------------------------------------------------------------------------------------------


def webhook_sign(secret: str, timestamp: str | int, body: bytes | str) -> str:
    """The `X-Owlat-Signature` value: `v1=` + hex HMAC-SHA256(secret, "<timestamp>.<body>")."""
    raw = body.encode() if isinstance(body, str) else body
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256)
    return f"{SIGNATURE_VERSION}={mac.hexdigest()}"


def webhook_verify_signature(
    secret: str, timestamp: str | int, body: bytes | str, header: str | None
) -> bool:
    """True if `header` (possibly several comma-separated `v1=` values) signs `timestamp` and `body`."""
    if not header:
        return False
    expected = webhook_sign(secret, timestamp, body)
    return any(hmac.compare_digest(part.strip(), expected) for part in header.split(","))


def webhook_body(delivery: WebhookDelivery) -> bytes:
    envelope = {
        "id": str(delivery.event_id),
        "type": delivery.event_type,
        "createdAt": delivery.created_at.isoformat(),
        "data": delivery.payload,
    }
    return json.dumps(envelope, separators=(",", ":"), default=str).encode()


# --- delivery -------------------------------------------------------------------------------------------


def _claim(delivery_id: str, now: dt.datetime) -> WebhookDelivery | None:
    """Take the next attempt of a pending, due delivery; None if it is not ours to take."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id).select_related("endpoint").first()
    if delivery is None or delivery.status != WebhookDeliveryStatus.PENDING:
        return None
    if delivery.next_attempt_at is not None and delivery.next_attempt_at > now + DUE_SLACK:
        return None  # not due yet, or another execution holds the in-flight lease
    if delivery.attempts >= total_attempts():
        # every attempt was claimed but the last one never reported back (its worker died)
        WebhookDelivery.objects.filter(
            pk=delivery.pk, status=WebhookDeliveryStatus.PENDING, attempts=delivery.attempts
        ).update(status=WebhookDeliveryStatus.FAILED, next_attempt_at=None)
        return None
    lease = now + dt.timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + IN_FLIGHT_MARGIN_SECONDS)
    won = (
        WebhookDelivery.objects.filter(
            pk=delivery.pk, status=WebhookDeliveryStatus.PENDING, attempts=delivery.attempts
        )
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now + DUE_SLACK))
        .update(attempts=F("attempts") + 1, last_attempt_at=now, next_attempt_at=lease)
    )
    if not won:
        return None
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.next_attempt_at = lease
    return delivery


def _post(delivery: WebhookDelivery) -> tuple[int | None, str | None, int]:
    body = webhook_body(delivery)
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Owlat-Event": delivery.event_type,
        "X-Owlat-Delivery": str(delivery.pk),
        "X-Owlat-Timestamp": timestamp,
        "X-Owlat-Signature": webhook_sign(delivery.endpoint.secret, timestamp, body),
    }
    started = time.monotonic()
    try:
        with outbound.requests_session() as session:
            response = session.post(
                delivery.endpoint.url,
                data=body,
                headers=headers,
                timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
                allow_redirects=False,
            )
    except outbound.OutboundRefused as exc:
        # never connected: the log names the reason only (nothing about what listens there)
        return None, f"Refused: {exc}"[:1000], 0
    except requests.RequestException as exc:
        return None, f"{type(exc).__name__}: {exc}"[:1000], int((time.monotonic() - started) * 1000)
    duration = int((time.monotonic() - started) * 1000)
    if 200 <= response.status_code < 300:
        return response.status_code, None, duration
    return response.status_code, f"HTTP {response.status_code}: {response.text[:500]}", duration


def webhook_deliver_task(delivery_id: str) -> str:
    """Make the next attempt of one delivery (idempotent: a duplicate or early run is a no-op)."""
    now = timezone.now()
    delivery = _claim(delivery_id, now)
    if delivery is None:
        return f"webhook delivery {delivery_id}: nothing to do"
    status_code, error, duration = _post(delivery)
    WebhookAttempt.objects.create(
        delivery=delivery,
        attempt=delivery.attempts,
        status_code=status_code,
        error=error,
        duration_ms=duration,
    )
    mine = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=WebhookDeliveryStatus.PENDING, attempts=delivery.attempts
    )
    done_at = timezone.now()
    if error is None:
        mine.update(
            status=WebhookDeliveryStatus.SUCCEEDED,
            delivered_at=done_at,
            next_attempt_at=None,
            last_status_code=status_code,
            last_error=None,
        )
        return f"webhook delivery {delivery_id}: delivered on attempt {delivery.attempts}"
    delays = settings.WEBHOOK_RETRY_DELAYS_SECONDS
    if delivery.attempts <= len(delays):
        due = done_at + dt.timedelta(seconds=delays[delivery.attempts - 1])
        if mine.update(next_attempt_at=due, last_status_code=status_code, last_error=error):
            enqueue(DELIVER_TASK, str(delivery.pk), at=due)
        return (
            f"webhook delivery {delivery_id}: attempt {delivery.attempts} failed, retry at {due.isoformat()}"
        )
    mine.update(
        status=WebhookDeliveryStatus.FAILED,
        next_attempt_at=None,
        last_status_code=status_code,
        last_error=error,
    )
    logger.warning("webhook delivery %s failed after %s attempts: %s", delivery_id, delivery.attempts, error)
    return f"webhook delivery {delivery_id}: failed after {delivery.attempts} attempts"


def webhook_deliveries_recover_task(*, now: dt.datetime | None = None) -> str:
    """Safety net: re-enqueue pending deliveries whose attempt is overdue (a lost task or a dead worker)."""
    now = now or timezone.now()
    stale = now - dt.timedelta(seconds=60)
    ids = list(
        WebhookDelivery.objects.filter(status=WebhookDeliveryStatus.PENDING)
        .filter(Q(next_attempt_at__lt=stale) | Q(next_attempt_at__isnull=True, created_at__lt=stale))
        .values_list("pk", flat=True)[:1000]
    )
    for pk in ids:
        enqueue(DELIVER_TASK, str(pk))
    return f"re-enqueued {len(ids)} overdue webhook deliveries"


def webhook_deliveries_retry_failed(
    *, organization_id: Any = None, since: dt.datetime | None = None, apply: bool = False
) -> int:
    """Operator action: give `failed` deliveries (optionally of one organization / created since) a fresh round
    of attempts. Dry run unless `apply`; returns how many deliveries qualify (or were reopened)."""
    qs = WebhookDelivery.objects.filter(status=WebhookDeliveryStatus.FAILED)
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    ids = [str(pk) for pk in qs.values_list("pk", flat=True)]
    if not apply:
        return len(ids)
    reopened = 0
    for pk in ids:
        with transaction.atomic():
            if WebhookDelivery.objects.filter(pk=pk, status=WebhookDeliveryStatus.FAILED).update(
                status=WebhookDeliveryStatus.PENDING, attempts=0, next_attempt_at=None
            ):
                enqueue(DELIVER_TASK, pk)
                reopened += 1
    return reopened
