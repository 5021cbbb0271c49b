"""`/api/v1/inbox/...` configuration views: agent configuration, handling rules, the organization's model provider
and the circuit breakers. Thin: a serializer checks the request, `inbox.configuration` / `inbox.breakers` (the
admin's writers too) act, a serializer answers. Reads need `inbox:read`, writes `inbox:manage`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from inbox import breakers, configuration
from inbox.api.config_serializers import (
    AgentConfigSerializer,
    AgentConfigWriteSerializer,
    CircuitBreakerCloseSerializer,
    CircuitBreakerSerializer,
    HandlingRuleSerializer,
    HandlingRuleWriteSerializer,
    ModelProviderSerializer,
    ModelProviderWriteSerializer,
    model_provider_data,
)
from inbox.api.views import InboxView
from inbox.models import HandlingRule, LlmProviderSetting
from owlat.api.base import require_uuid, validated
from owlat.api.errors import not_found
from owlat.api.schema import DeletedSerializer, envelope, errors

RULE_ID = OpenApiParameter("rule_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The rule's id.")


def _refused(exc: configuration.ConfigInvalid, serializer_class: type) -> serializers.ValidationError:
    """A service refusal as DRF's validation error on the camelCase fields (400 naming the field)."""
    wire = {}
    for name, field in serializer_class().fields.items():
        wire[field.source or name] = name
    wire.update({"api_key": "apiKey", "base_url": "baseUrl", "is_shadow_mode": "isShadowMode"})
    return serializers.ValidationError({wire.get(k, k): [v] for k, v in exc.errors.items()})


# --- agent configuration --------------------------------------------------------------------------------------


@extend_schema(tags=["Inbox configuration"])
class AgentConfigView(InboxView):
    required_scopes = {"GET": "inbox:read", "PUT": "inbox:manage", "PATCH": "inbox:manage"}

    @extend_schema(
        operation_id="inbox_config_retrieve",
        summary="Get the agent configuration",
        description="Auto-reply, shadow mode, thresholds and limits, undo windows, the clarify step, the "
        "coalescing window and working hours. Scope `inbox:read`.",
        responses={200: envelope(AgentConfigSerializer, "AgentConfig")},
    )
    def get(self, request: Request) -> Response:
        return self.ok(AgentConfigSerializer(configuration.agent_config_get(self.organization_id)).data)

    @extend_schema(
        operation_id="inbox_config_update",
        summary="Update the agent configuration",
        description="Only the keys sent change (PUT and PATCH alike). Turning auto-reply off cancels the "
        "pending automatic sends. Scope `inbox:manage`.",
        request=AgentConfigWriteSerializer,
        responses={200: envelope(AgentConfigSerializer, "AgentConfig"), **errors(400)},
    )
    def put(self, request: Request) -> Response:
        changes = validated(AgentConfigWriteSerializer, request.data)
        try:
            config, _ = configuration.agent_config_update(
                organization_id=self.organization_id, changes=changes, actor=self.actor
            )
        except configuration.ConfigInvalid as exc:
            raise _refused(exc, AgentConfigWriteSerializer) from None
        return self.ok(AgentConfigSerializer(config).data)

    patch = put


# --- handling rules -------------------------------------------------------------------------------------------


@extend_schema(tags=["Inbox configuration"])
class HandlingRuleListView(InboxView):
    required_scopes = {"GET": "inbox:read", "POST": "inbox:manage"}
    ordering = ("position", "name", "uid")
    list_key = "inbox/rules"

    @extend_schema(
        operation_id="inbox_rules_list",
        summary="List the handling rules",
        description="In the order they run (the first matching active rule wins). Scope `inbox:read`.",
        responses={200: HandlingRuleSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(HandlingRule.objects.filter(organization_id=self.organization_id))
        return self.get_paginated_response(HandlingRuleSerializer(page, many=True).data)

    @extend_schema(
        operation_id="inbox_rules_create",
        summary="Create a handling rule",
        description="`archive` closes matching messages without a reply; `relabel` changes their category "
        "(needs `category`; complaints, spam and urgent mail keep theirs). Scope `inbox:manage`.",
        request=HandlingRuleWriteSerializer,
        responses={201: envelope(HandlingRuleSerializer, "HandlingRule"), **errors(400)},
    )
    def post(self, request: Request) -> Response:
        values = _rule_values(validated(HandlingRuleWriteSerializer, request.data))
        try:
            rule = configuration.handling_rule_create(
                organization_id=self.organization_id, values=values, actor=self.actor
            )
        except configuration.ConfigInvalid as exc:
            raise _refused(exc, HandlingRuleWriteSerializer) from None
        return self.created(HandlingRuleSerializer(rule).data)


def _rule_values(data: dict[str, Any]) -> dict[str, Any]:
    if "category" in data:
        data["category"] = data["category"] or ""
    return data


@extend_schema(tags=["Inbox configuration"], parameters=[RULE_ID])
class HandlingRuleDetailView(InboxView):
    required_scopes = {
        "GET": "inbox:read",
        "PUT": "inbox:manage",
        "PATCH": "inbox:manage",
        "DELETE": "inbox:manage",
    }

    def get_rule(self, rule_id: str) -> HandlingRule:
        uid = require_uuid(rule_id, "rule")
        rule = HandlingRule.objects.filter(uid=uid, organization_id=self.organization_id).first()
        if rule is None:
            raise not_found("Rule not found")
        return rule

    @extend_schema(
        operation_id="inbox_rules_retrieve",
        summary="Get a handling rule",
        description="Scope `inbox:read`.",
        responses={200: envelope(HandlingRuleSerializer, "HandlingRule"), **errors(400, 404)},
    )
    def get(self, request: Request, rule_id: str) -> Response:
        return self.ok(HandlingRuleSerializer(self.get_rule(rule_id)).data)

    @extend_schema(
        operation_id="inbox_rules_update",
        summary="Update a handling rule",
        description="Only the keys sent change (PUT and PATCH alike); switching to `archive` drops the "
        "category. Scope `inbox:manage`.",
        request=HandlingRuleWriteSerializer(partial=True),
        responses={200: envelope(HandlingRuleSerializer, "HandlingRule"), **errors(400, 404)},
    )
    def put(self, request: Request, rule_id: str) -> Response:
        require_uuid(rule_id, "rule")
        changes = _rule_values(validated(HandlingRuleWriteSerializer, request.data, partial=True))
        try:
            rule = configuration.handling_rule_update(
                rule=self.get_rule(rule_id), changes=changes, actor=self.actor
            )
        except configuration.ConfigInvalid as exc:
            raise _refused(exc, HandlingRuleWriteSerializer) from None
        return self.ok(HandlingRuleSerializer(rule).data)

    patch = put

    @extend_schema(
        operation_id="inbox_rules_destroy",
        summary="Delete a handling rule",
        description="Scope `inbox:manage`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404)},
    )
    def delete(self, request: Request, rule_id: str) -> Response:
        rule = self.get_rule(rule_id)
        uid = rule.uid
        configuration.handling_rule_delete(rule=rule, actor=self.actor)
        return self.deleted(uid)


# --- model provider -------------------------------------------------------------------------------------------


@extend_schema(tags=["Inbox configuration"])
class ModelProviderView(InboxView):
    required_scopes = {
        "GET": "inbox:read",
        "PUT": "inbox:manage",
        "PATCH": "inbox:manage",
        "DELETE": "inbox:manage",
    }

    @extend_schema(
        operation_id="inbox_model_provider_retrieve",
        summary="Get the model provider",
        description="The organization's own provider, or the server's when it has none; the models per task "
        "and the call timeout are the server's (not set per organization). The API key is never returned. "
        "Scope `inbox:read`.",
        responses={200: envelope(ModelProviderSerializer, "ModelProvider")},
    )
    def get(self, request: Request) -> Response:
        return self.ok(ModelProviderSerializer(model_provider_data(self.organization_id)).data)

    @extend_schema(
        operation_id="inbox_model_provider_update",
        summary="Set the model provider",
        description="The organization's own OpenAI-compatible provider (OpenAI, OpenRouter, Ollama, or any "
        "`baseUrl`); only the keys sent change (PUT and PATCH alike). `apiKey` is stored encrypted and never "
        "returned; without it the stored key is kept; a provider other than Ollama needs one. "
        "Scope `inbox:manage`.",
        request=ModelProviderWriteSerializer,
        responses={200: envelope(ModelProviderSerializer, "ModelProvider"), **errors(400)},
    )
    def put(self, request: Request) -> Response:
        data = validated(ModelProviderWriteSerializer, request.data)
        row = LlmProviderSetting.objects.filter(organization_id=self.organization_id).first()
        try:
            configuration.provider_setting_save(
                organization_id=self.organization_id,
                provider=data.get("provider", row.provider if row else None),
                base_url=data.get("baseUrl", row.base_url if row else ""),
                api_key=data.get("apiKey"),
                clear_api_key=bool(data.get("clearApiKey")),
                actor=self.actor,
            )
        except configuration.ConfigInvalid as exc:
            raise _refused(exc, ModelProviderWriteSerializer) from None
        return self.ok(ModelProviderSerializer(model_provider_data(self.organization_id)).data)

    patch = put

    @extend_schema(
        operation_id="inbox_model_provider_destroy",
        summary="Remove the organization's model provider",
        description="Its model calls use the server's provider again (404 when it has none of its own). "
        "Scope `inbox:manage`.",
        responses={200: envelope(ModelProviderSerializer, "ModelProvider"), **errors(404)},
    )
    def delete(self, request: Request) -> Response:
        if not configuration.provider_setting_delete(organization_id=self.organization_id, actor=self.actor):
            raise not_found("Model provider not found")
        return self.ok(ModelProviderSerializer(model_provider_data(self.organization_id)).data)


# --- circuit breakers -----------------------------------------------------------------------------------------


@extend_schema(tags=["Inbox configuration"])
class CircuitBreakerListView(InboxView):
    required_scopes = {"GET": "inbox:read"}

    @extend_schema(
        operation_id="inbox_breakers_list",
        summary="List the circuit breakers",
        description="All three (`llm_failure`, `confidence_degradation`, `rejection_spike`), not paginated. "
        "While one is open no draft is sent automatically. Scope `inbox:read`.",
        responses={200: envelope(CircuitBreakerSerializer, "CircuitBreaker", many=True)},
    )
    def get(self, request: Request) -> Response:
        rows = breakers.breakers_of(self.organization_id)
        return self.ok(CircuitBreakerSerializer(rows, many=True).data)


@extend_schema(tags=["Inbox configuration"])
class CircuitBreakerCloseView(InboxView):
    required_scopes = {"POST": "inbox:manage"}

    @extend_schema(
        operation_id="inbox_breakers_close",
        summary="Close a circuit breaker",
        description="Closes it now and forgets its observations (do this once the cause is fixed); closing a "
        "closed breaker changes nothing. Scope `inbox:manage`.",
        request=CircuitBreakerCloseSerializer,
        responses={200: envelope(CircuitBreakerSerializer, "CircuitBreaker"), **errors(400)},
    )
    def post(self, request: Request) -> Response:
        kind = validated(CircuitBreakerCloseSerializer, request.data)["kind"]
        breakers.breaker_close(organization_id=self.organization_id, kind=kind, actor=self.actor)
        row = next(b for b in breakers.breakers_of(self.organization_id) if b.kind == kind)
        return self.ok(CircuitBreakerSerializer(row).data)
