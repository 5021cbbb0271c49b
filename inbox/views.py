"""Inbound mail entry points outside `/api/v1` (AGT-02): the raw RFC 5322 endpoint for an MTA, authenticated by
the organization's inbound secret in the Authorization header (failed guesses throttled per client,
owlat.lookup_throttle), and django-anymail's inbound webhooks (its own signature/basic-auth checks), whose
`inbound` signal is the library's extension point."""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from inbox.models import AgentConfig
from inbox.receive import InvalidMessage, MessageTooLarge, check_size, message_receive, parse_raw

logger = logging.getLogger(__name__)


def _error(status: int, category: str, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": {"category": category, "message": message, **extra}}, status=status)


def inbound_secret_from_request(request: HttpRequest) -> str | None:
    """The inbound secret of `Authorization: Bearer <secret>`, or the password of HTTP basic auth (any user name:
    for MTAs and relays that can only put credentials in the URL, `https://owlat:<secret>@host/inbound/raw`)."""
    header = (request.META.get("HTTP_AUTHORIZATION") or "").strip()
    scheme, _, value = header.partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return value
    if scheme.lower() == "basic" and value:
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2] or None
    return None


def _config_for_secret(secret: str | None) -> AgentConfig | None:
    if not secret or len(secret) > 128:
        return None
    return AgentConfig.objects.filter(inbound_secret=secret).only("organization_id").first()


@csrf_exempt
@require_POST
def raw_inbound(request: HttpRequest) -> JsonResponse:
    """`POST /inbound/raw` with `Authorization: Bearer <inbound secret>` (or basic auth, the secret as password):
    the body is one RFC 5322 message (Content-Type `message/rfc822`). The secret never travels in the URL, so
    access logs do not carry it."""
    from owlat.lookup_throttle import lookup_failed, lookup_refused

    wait = lookup_refused(request)
    if wait:
        return _throttled(wait)
    config = _config_for_secret(inbound_secret_from_request(request))
    if config is None:
        wait = lookup_failed(request)
        if wait:
            return _throttled(wait)
        response = _error(
            401,
            "unauthenticated",
            "Invalid inbound secret. Send it as: Authorization: Bearer <inbound secret>",
        )
        response["WWW-Authenticate"] = 'Bearer realm="inbound", Basic realm="inbound"'
        return response
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    try:
        check_size(length)
        raw = request.body
        if not raw.strip():
            return _error(400, "validation", "The request body must be an RFC 5322 message", field="body")
        parsed = parse_raw(raw)
        result = message_receive(
            organization_id=config.organization_id, parsed=parsed, actor="system:inbound_raw"
        )
    except MessageTooLarge as exc:
        return _error(413, "payload_too_large", str(exc), field="body", limit=exc.limit)
    except RequestDataTooBig:
        limit = settings.INBOX_MAX_MESSAGE_BYTES
        return _error(
            413,
            "payload_too_large",
            f"Message is too large (at most {limit} bytes)",
            field="body",
            limit=limit,
        )
    except InvalidMessage as exc:
        return _error(400, "validation", str(exc), field=exc.field)
    m = result.message
    return JsonResponse(
        {
            "data": {
                "id": str(m.pk),
                "messageId": m.message_id,
                "processingStatus": m.processing_status,
                "duplicate": not result.created,
            }
        },
        status=201 if result.created else 200,
    )


def _throttled(wait: int) -> JsonResponse:
    response = _error(
        429,
        "rate_limited",
        f"Too many failed attempts from this address. Retry in {wait} s.",
        retryAfter=wait,
    )
    response["Retry-After"] = str(wait)
    return response


@csrf_exempt
def raw_inbound_legacy(request: HttpRequest, token: str) -> JsonResponse:
    """The former `POST /inbound/raw/<secret>`: refused without looking at the secret — a secret in a URL ends up
    in access logs, so the answer says to rotate it and send it in the Authorization header."""
    return _error(
        410,
        "gone",
        "The inbound secret no longer goes in the URL: POST to /inbound/raw with the header "
        "'Authorization: Bearer <inbound secret>'. The secret in this URL may be in access logs: rotate it "
        "(admin → Inbox → Agent configuration → Rotate inbound secret).",
    )


def organization_for_recipients(recipients: list[str]) -> Any:
    """The organization that verified a recipient's domain (a pending or failed registration proves nothing: any
    organization can register any name, and only one can verify it)."""
    from owlat.models import Domain, DomainStatus

    domains = {r.rsplit("@", 1)[-1].lower() for r in recipients if "@" in r}
    if not domains:
        return None
    return (
        Domain.objects.filter(domain__in=domains, status=DomainStatus.VERIFIED)
        .order_by("created_at")
        .values_list("organization_id", flat=True)
        .first()
    )


def anymail_inbound_received(sender: Any, event: Any, esp_name: str, **kwargs: Any) -> None:
    """django-anymail `inbound` signal → the receive path (signature already checked by anymail's view)."""
    message = event.message
    if message is None:
        return
    recipients = [a.addr_spec for a in (message.to or [])] + [a.addr_spec for a in (message.cc or [])]
    org_id = organization_for_recipients(recipients)
    if org_id is None:
        logger.warning("inbound mail from %s via %s: no organization owns %s", esp_name, esp_name, recipients)
        return
    try:
        parsed = parse_raw(message.as_bytes())
        if esp_name:
            parsed.headers.setdefault("x-anymail-esp", esp_name)
        message_receive(organization_id=org_id, parsed=parsed, actor=f"system:inbound_{esp_name}")
    except (InvalidMessage, MessageTooLarge) as exc:
        logger.warning("inbound mail via %s refused: %s", esp_name, exc)
