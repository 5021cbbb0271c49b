"""Templates API (API-26): `GET|POST /templates`, `GET|PUT|PATCH|DELETE /templates/{id}`,
`POST /templates/{id}/publish` and `/unpublish`. Thin views over `templates.services` and `templates.lifecycle`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from owlat.api.base import (
    ApiView,
    filter_by_params,
    outcome_error,
    require_uuid,
    transition_object,
    validated,
)
from owlat.api.errors import invalid_input, not_found
from owlat.api.schema import DeletedSerializer, envelope, errors, transitioned_envelope
from templates.api.serializers import (
    TemplateCreateSerializer,
    TemplateListQuerySerializer,
    TemplateSerializer,
    TemplateSummarySerializer,
    TemplateWriteSerializer,
)
from templates.block_translations import overrides_clean
from templates.blocks import BlockError, is_block_document
from templates.lifecycle import email_template_set_status
from templates.models import EmailTemplate, TemplateStatus
from templates.services import (
    email_template_create,
    email_template_delete,
    email_template_update,
    template_in_use,
)

TEMPLATE_ID = OpenApiParameter(
    "template_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The template's id."
)


@extend_schema(tags=["Templates"])
class TemplateListView(ApiView):
    required_scopes = {"GET": "templates:read", "POST": "templates:write"}
    list_key = "templates"

    @extend_schema(
        operation_id="templates_list",
        summary="List email templates",
        description="Newest first, without their content. Scope `templates:read`.",
        parameters=[TemplateListQuerySerializer],
        responses={200: TemplateSummarySerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        params = validated(TemplateListQuerySerializer, request.query_params)
        queryset = filter_by_params(
            EmailTemplate.objects.filter(organization_id=self.organization_id),
            params,
            status="status__in",
            type="type__in",
            search="name__icontains",
        )
        return self.list_response(queryset, TemplateSummarySerializer)

    @extend_schema(
        operation_id="templates_create",
        summary="Create an email template",
        description="A new template is a draft. Scope `templates:write`.",
        request=TemplateCreateSerializer,
        responses={201: envelope(TemplateSerializer), **errors(400)},
    )
    def post(self, request: Request) -> Response:
        fields = block_checked(validated(TemplateWriteSerializer, request.data), None)
        template = email_template_create(
            organization_id=self.organization_id, actor=self.actor, fields=fields
        )
        return self.created(TemplateSerializer(template).data)


def block_checked(fields: dict[str, Any], template: EmailTemplate | None) -> dict[str, Any]:
    """A write of a block template: its `translations` are block texts of its document (checked, 400 naming the
    path); the HTML is rendered from the blocks, so `htmlContent` alone cannot change it."""
    document = fields["content"] if "content" in fields else getattr(template, "content", None)
    if not is_block_document(document):
        return fields
    if "content" not in fields and "html_content" in fields:
        raise invalid_input(
            "htmlContent is rendered from this template's blocks: change content instead (HTML as written "
            "goes in a raw block)",
            field="htmlContent",
        )
    fields = {k: v for k, v in fields.items() if k != "html_content"}
    if "translations" in fields or "content" in fields:
        texts = fields.get("translations", getattr(template, "translations", None))
        try:
            fields["translations"] = overrides_clean(texts, document)
        except BlockError as exc:
            raise invalid_input(exc.message, field=exc.field) from None
    return fields


@extend_schema(tags=["Templates"], parameters=[TEMPLATE_ID])
class TemplateDetailView(ApiView):
    required_scopes = {
        "GET": "templates:read",
        "PUT": "templates:write",
        "PATCH": "templates:write",
        "DELETE": "templates:write",
    }

    def get_template(self, template_id: str) -> EmailTemplate:
        return self.get_owned(EmailTemplate, template_id, "template")

    @extend_schema(
        operation_id="templates_retrieve",
        summary="Get an email template",
        description="With its content. Scope `templates:read`.",
        responses={200: envelope(TemplateSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, template_id: str) -> Response:
        return self.ok(TemplateSerializer(self.get_template(template_id)).data)

    @extend_schema(
        operation_id="templates_update",
        summary="Update an email template",
        description="Only the keys sent change (PUT and PATCH alike); `status` changes through publish and "
        "unpublish. Scope `templates:write`.",
        request=TemplateWriteSerializer(partial=True),
        responses={200: envelope(TemplateSerializer), **errors(400, 404)},
    )
    def put(self, request: Request, template_id: str) -> Response:
        template = self.get_template(template_id)
        changes = block_checked(validated(TemplateWriteSerializer, request.data, partial=True), template)
        template = email_template_update(template=template, actor=self.actor, changes=changes)
        return self.ok(TemplateSerializer(template).data)

    patch = put

    @extend_schema(
        operation_id="templates_destroy",
        summary="Delete an email template",
        description="Refused (422 `template_in_use`, with `usedBy`) while a campaign or automation uses it. "
        "Scope `templates:write`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404, 422)},
    )
    def delete(self, request: Request, template_id: str) -> Response:
        template = self.get_template(template_id)
        return self.delete_unless_in_use(
            template,
            "template",
            template_in_use,
            lambda: email_template_delete(template=template, actor=self.actor),
            message="Template is in use and cannot be deleted",
        )


@extend_schema(tags=["Templates"], parameters=[TEMPLATE_ID], request=None)
class TemplateTransitionView(ApiView):
    required_scopes = {"POST": "templates:write"}
    empty_body_methods = frozenset({"POST"})
    target: str = ""

    def post(self, request: Request, template_id: str) -> Response:
        pk = require_uuid(template_id, "template")
        outcome = email_template_set_status(
            template_id=pk, to=self.target, actor=self.actor, organization_id=self.organization_id
        )
        if not outcome.ok:
            if outcome.reason == "template_not_found":
                raise not_found("Template not found")
            raise outcome_error(outcome)
        template = EmailTemplate.objects.get(pk=pk)
        return self.ok(TemplateSerializer(template).data, transition=transition_object(outcome))


class TemplatePublishView(TemplateTransitionView):
    target = TemplateStatus.PUBLISHED

    @extend_schema(
        operation_id="templates_publish",
        summary="Publish an email template",
        description="Needs HTML content (422 `template_no_content` otherwise). Publishing a published "
        "template is recorded, not an error. Scope `templates:write`.",
        responses={200: transitioned_envelope(TemplateSerializer), **errors(400, 404, 422)},
    )
    def post(self, request: Request, template_id: str) -> Response:
        return super().post(request, template_id)


class TemplateUnpublishView(TemplateTransitionView):
    target = TemplateStatus.DRAFT

    @extend_schema(
        operation_id="templates_unpublish",
        summary="Unpublish an email template",
        description="Back to draft. Scope `templates:write`.",
        responses={200: transitioned_envelope(TemplateSerializer), **errors(400, 404, 422)},
    )
    def post(self, request: Request, template_id: str) -> Response:
        return super().post(request, template_id)
