"""Transactional API (API-22, API-32; DLV-14): thin views over `delivery.services`.

`POST /api/v1/transactional` validates the wire format in the API-22 order, then the intake service runs the
DLV-14 checks; `Idempotency-Key`, authentication, rate limit, scope and the `transactional` flag are handled
by the shared `ApiView` pipeline (H1). `GET /api/v1/transactional/{sendId}` reads a send row back.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from drf_spectacular.utils import extend_schema

from delivery.models import TransactionalSend
from delivery.services import AttachmentInput, IntakeRejected, transactional_send_create
from owlat import outbound
from owlat.api.base import iso, parse_uuid
from owlat.api.errors import ApiError, invalid_input, not_found
from owlat.api.legacy import LegacyApiView as ApiView
from owlat.contacts import is_valid_email

LANGUAGE_RE = re.compile(r"^[a-z]{2}(-[a-z]{2,3})?$", re.IGNORECASE)
MAX_ATTACHMENTS = 10
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
SCALAR_MESSAGE = "dataVariables values must be strings, numbers, booleans or null"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | bool | int | float)


def _attachments(value: Any) -> list[AttachmentInput]:
    if not isinstance(value, list):
        raise invalid_input("attachments must be an array", field="attachments")
    if len(value) > MAX_ATTACHMENTS:
        raise invalid_input("Maximum 10 attachments allowed", field="attachments")
    out: list[AttachmentInput] = []
    total = 0
    for i, item in enumerate(value):
        at = f"attachments[{i}]"
        if not isinstance(item, dict):
            raise invalid_input(f"{at}.filename is required and must be a string", field=f"{at}.filename")
        filename = item.get("filename")
        if not isinstance(filename, str) or not filename.strip():
            raise invalid_input(f"{at}.filename is required and must be a string", field=f"{at}.filename")
        if "/" in filename or "\\" in filename:
            raise invalid_input(f"{at}.filename must not contain path separators", field=f"{at}.filename")
        content, url = item.get("content"), item.get("url")
        if (content is None) == (url is None):
            raise invalid_input(f'{at} must have exactly one of "content" (base64) or "url"', field=at)
        content_type = item.get("contentType") if isinstance(item.get("contentType"), str) else None
        if url is not None:
            if not isinstance(url, str) or not url.lower().startswith("https://"):
                raise invalid_input(f"{at}.url must be an HTTPS URL", field=f"{at}.url")
            try:
                outbound.check_url(url, schemes=("https",))
            except outbound.OutboundRefused as exc:
                raise invalid_input(f"{at}.url is not allowed: {exc}", field=f"{at}.url")
            out.append(AttachmentInput(filename=filename, url=url, content_type=content_type))
            continue
        if not isinstance(content, str):
            raise invalid_input(f"{at}.content must be a base64-encoded string", field=f"{at}.content")
        try:
            data = base64.b64decode(re.sub(r"\s+", "", content), validate=True)
        except (binascii.Error, ValueError):
            raise invalid_input(f"{at}.content is not valid base64", field=f"{at}.content")
        total += len(data)
        if total > MAX_ATTACHMENT_BYTES:
            raise invalid_input("Total attachment size exceeds 10MB limit", field="attachments")
        out.append(AttachmentInput(filename=filename, content=data, content_type=content_type))
    return out


class TransactionalSendView(ApiView):
    """API-22 `POST /transactional`."""

    required_scope = "transactional:send"
    feature_flag = "transactional"

    @extend_schema(summary="Send a transactional email", responses={202: dict})
    def post(self, request):
        body = self.body()
        email = body.get("email")
        if email is None:
            raise invalid_input("email is required", field="email")
        if not isinstance(email, str):
            raise invalid_input("email must be a string", field="email")
        if not is_valid_email(email):
            raise invalid_input("Invalid email format", field="email")
        transactional_id, slug = body.get("transactionalId"), body.get("slug")
        if transactional_id is not None and not isinstance(transactional_id, str):
            raise invalid_input("transactionalId must be a string", field="transactionalId")
        if slug is not None and not isinstance(slug, str):
            raise invalid_input("slug must be a string", field="slug")
        if not (transactional_id or slug):
            raise invalid_input("Either transactionalId or slug is required")
        data_variables = body.get("dataVariables")
        if data_variables is not None:
            if not isinstance(data_variables, dict):
                raise invalid_input("dataVariables must be an object", field="dataVariables")
            for key, value in data_variables.items():
                if not _scalar(value):
                    raise invalid_input(SCALAR_MESSAGE, field=f"dataVariables.{key}")
        language = body.get("language")
        if language is not None:
            if not isinstance(language, str):
                raise invalid_input("language must be a string", field="language")
            if not LANGUAGE_RE.match(language):
                raise invalid_input(
                    "language must be a valid language code (e.g., 'en', 'de', 'fr', 'en-US')",
                    field="language",
                )
        attachments = _attachments(body["attachments"]) if body.get("attachments") is not None else []
        try:
            intake = transactional_send_create(
                organization_id=self.organization_id,
                email=email,
                actor=self.actor,
                transactional_id=transactional_id or None,
                slug=slug if not transactional_id else None,
                data_variables=data_variables,
                language=language,
                attachments=attachments,
            )
        except IntakeRejected as exc:
            raise ApiError(exc.category, exc.message, {"reason": exc.reason})
        return self.accepted(
            {
                "status": "queued",
                "email": email,
                "transactionalEmailId": str(intake.send.pk),
                "slug": intake.slug,
                "contactId": str(intake.contact.pk),
                "contactCreated": intake.contact_created,
                "language": intake.language,
            }
        )


def send_status_data(send: TransactionalSend) -> dict[str, Any]:
    """API-32 read-back of a transactional send row."""
    return {
        "id": str(send.pk),
        "email": send.email,
        "slug": send.transactional_email.slug if send.transactional_email_id else None,
        "status": send.status,
        "language": send.language,
        "queuedAt": iso(send.queued_at),
        "sentAt": iso(send.sent_at),
        "deliveredAt": iso(send.delivered_at),
        "openedAt": iso(send.opened_at),
        "clickedAt": iso(send.clicked_at),
        "bouncedAt": iso(send.bounced_at),
        "bounceType": send.bounce_type,
        "complainedAt": iso(send.complained_at),
        "failedAt": iso(send.failed_at),
        "errorCode": send.error_code,
        "errorMessage": send.error_message,
    }


class TransactionalStatusView(ApiView):
    """API-32 `GET /transactional/{sendId}`."""

    required_scope = "transactional:read"

    @extend_schema(summary="Read a transactional send's status", responses={200: dict})
    def get(self, request, send_id: str):
        pk = parse_uuid(send_id)
        if pk is None:
            raise invalid_input("Invalid transactional send ID format")
        send = (
            TransactionalSend.objects.select_related("transactional_email")
            .filter(
                pk=pk, organization_id=self.organization_id, kind="transactional", deleted_at__isnull=True
            )
            .first()
        )
        if send is None:
            raise not_found("Transactional send not found")
        return self.ok(send_status_data(send))
