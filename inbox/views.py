"""Inbound mail entry points outside `/api/v1` (AGT-02): the raw RFC 5322 endpoint for an MTA, authenticated by
the organization's inbound secret, and django-anymail's inbound webhooks (its own signature/basic-auth checks),
whose `inbound` signal is the library's extension point."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from inbox.models import AgentConfig
from inbox.receive import InvalidMessage, MessageTooLarge, check_size, message_receive, parse_raw

logger = logging.getLogger(__name__)


def _error(status: int, category: str, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": {"category": category, "message": message, **extra}}, status=status)


@csrf_exempt
@require_POST
def raw_inbound(request: HttpRequest, token: str) -> JsonResponse:
    """`POST /inbound/raw/<token>`: the body is one RFC 5322 message (Content-Type `message/rfc822`)."""
    config = AgentConfig.objects.filter(inbound_secret=token).only("organization_id").first()
    if config is None:
        return _error(401, "unauthenticated", "Invalid inbound token")
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


def organization_for_recipients(recipients: list[str]) -> Any:
    """The organization owning a recipient's domain (its registered sending domains)."""
    from owlat.models import Domain

    domains = {r.rsplit("@", 1)[-1].lower() for r in recipients if "@" in r}
    if not domains:
        return None
    return (
        Domain.objects.filter(domain__in=domains)
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
