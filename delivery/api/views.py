"""Transactional API (API-22, API-32; DLV-14): thin views over `delivery.services`.

`POST /api/v1/transactional` validates the body (`TransactionalSendSerializer`), then the intake service runs
the DLV-14 checks. `GET /api/v1/transactional/{sendId}` reads a send row back.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from delivery.api.serializers import (
    TransactionalQueuedSerializer,
    TransactionalSendSerializer,
    TransactionalSendStatusSerializer,
)
from delivery.models import TransactionalSend
from delivery.services import IntakeRejected, transactional_send_create
from owlat.api.base import ApiView, parse_uuid, validated
from owlat.api.errors import ApiError, invalid_input, not_found
from owlat.api.schema import envelope, errors


@extend_schema(tags=["Transactional"])
class TransactionalSendView(ApiView):
    required_scopes = {"POST": "transactional:send"}
    feature_flag = "transactional"

    @extend_schema(
        operation_id="transactional_send",
        summary="Send a transactional email",
        description="Queues one email of a published transactional email to `email`. Refusals of the send "
        "itself (unknown or unpublished email, suppressed recipient, sending limits) answer with "
        "`error.data.reason`. Send `Idempotency-Key` to make retries safe. Scope `transactional:send`.",
        request=TransactionalSendSerializer,
        responses={
            202: envelope(TransactionalQueuedSerializer, "TransactionalQueued"),
            **errors(400, 404, 422),
        },
    )
    def post(self, request: Request) -> Response:
        fields = validated(TransactionalSendSerializer, request.data)
        transactional_id = fields.get("transactionalId") or None
        try:
            intake = transactional_send_create(
                organization_id=self.organization_id,
                email=fields["email"],
                actor=self.actor,
                transactional_id=transactional_id,
                slug=fields.get("slug") if not transactional_id else None,
                data_variables=fields.get("dataVariables"),
                language=fields.get("language"),
                attachments=fields.get("attachments", []),
            )
        except IntakeRejected as exc:
            data = {"reason": exc.reason}
            if exc.reason == "subject_too_long":
                data.update(field="dataVariables", fields={"dataVariables": [exc.message]})
            raise ApiError(exc.category, exc.message, data)
        return self.accepted(
            {
                "status": "queued",
                "email": fields["email"],
                "transactionalEmailId": str(intake.send.pk),
                "slug": intake.slug,
                "contactId": str(intake.contact.pk),
                "contactCreated": intake.contact_created,
                "language": intake.language,
            }
        )


@extend_schema(tags=["Transactional"])
class TransactionalStatusView(ApiView):
    required_scopes = {"GET": "transactional:read"}

    @extend_schema(
        operation_id="transactional_retrieve",
        summary="Get a transactional send's status",
        description="Delivery progress of one send (`transactionalEmailId` of the send request). "
        "Scope `transactional:read`.",
        parameters=[
            OpenApiParameter(
                "send_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The send's id."
            )
        ],
        responses={
            200: envelope(TransactionalSendStatusSerializer, "TransactionalSendStatus"),
            **errors(400, 404),
        },
    )
    def get(self, request: Request, send_id: str) -> Response:
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
        return self.ok(TransactionalSendStatusSerializer(send).data)
