"""`/api/v1` views of campaigns (API-29 … API-31). Thin: validate with the serializers, call
`campaigns.services` / `campaigns.abtest`, answer with the resource and the transition object."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema

from campaigns import abtest, services
from campaigns.api.serializers import (
    READ_ONLY_KEYS,
    CampaignInputSerializer,
    DeclareWinnerInputSerializer,
    ScheduleInputSerializer,
    SendRowOutputSerializer,
    campaign_data,
    stats_data,
)
from campaigns.models import Campaign, CampaignStatus
from campaigns.preflight import validate_ready_to_send
from owlat.api.base import outcome_error, require_uuid
from owlat.api.compat import LegacyApiView as ApiView
from owlat.api.compat import parse_iso
from owlat.api.errors import ApiError, invalid_input, invalid_state, not_found
from owlat.permissions import Authority


def _validated(serializer_class: type, body: dict[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Run an input serializer; the first field error → 400 naming the field (API-08)."""
    serializer = serializer_class(data=body, partial=partial)
    if not serializer.is_valid():
        field, messages = next(iter(serializer.errors.items()))
        message = str(messages[0]) if isinstance(messages, list) else str(messages)
        raise invalid_input(f"{field}: {message}", field=field)
    return dict(serializer.validated_data)


def _service_error(exc: services.CampaignError) -> ApiError:
    if exc.category == "invalid_input":
        return invalid_input(exc.message, field=exc.field)
    if exc.category == "forbidden":
        return ApiError("forbidden", exc.message)
    return invalid_state(exc.message, exc.reason)


class CampaignsView(ApiView):
    feature_flag = "campaigns"

    def campaign(self, campaign_id: str) -> Campaign:
        pk = require_uuid(campaign_id, "campaign")
        campaign = Campaign.objects.filter(pk=pk, organization_id=self.organization_id).first()
        if campaign is None:
            raise not_found("Campaign not found")
        return campaign

    def read_only_check(self, body: dict[str, Any]) -> None:
        for key in READ_ONLY_KEYS:
            if key in body:
                raise invalid_input(f"{key} is read-only", field=key)


class CampaignListView(CampaignsView):
    scopes = {"GET": "campaigns:read", "POST": "campaigns:write"}

    @extend_schema(operation_id="campaigns_list", summary="List campaigns (API-29)", responses={200: dict})
    def get(self, request):
        queryset = Campaign.objects.filter(organization_id=self.organization_id)
        raw = self.query("status")
        if raw:
            statuses = [s.strip() for s in raw.split(",") if s.strip()]
            for value in statuses:
                if value not in CampaignStatus.values:
                    raise invalid_input(f"Invalid status: {value}", field="status")
            queryset = queryset.filter(status__in=statuses)
        term = self.search_term()
        if term:
            queryset = queryset.filter(name__icontains=term)
        return self.paginated(queryset, campaign_data, order=("-created_at", "-id"), list_key="campaigns")

    @extend_schema(
        summary="Create a campaign (API-29)", request=CampaignInputSerializer, responses={201: dict}
    )
    def post(self, request):
        body = self.body()
        self.read_only_check(body)
        if not isinstance(body.get("name"), str) or not body["name"].strip():
            raise invalid_input("name is required", field="name")
        fields = _validated(CampaignInputSerializer, body)
        try:
            campaign = services.campaign_create(
                organization_id=self.organization_id,
                actor=self.actor,
                fields=fields,
                authority=Authority.api_key("campaigns:write"),
            )
        except services.CampaignError as exc:
            raise _service_error(exc) from exc
        return self.created(campaign_data(campaign))


class CampaignDetailView(CampaignsView):
    scopes = {
        "GET": "campaigns:read",
        "PUT": "campaigns:write",
        "PATCH": "campaigns:write",
        "DELETE": "campaigns:write",
    }

    @extend_schema(operation_id="campaigns_retrieve", summary="A campaign (API-29)", responses={200: dict})
    def get(self, request, campaign_id: str):
        return self.ok(campaign_data(self.campaign(campaign_id)))

    @extend_schema(
        summary="Update a draft campaign (API-29)", request=CampaignInputSerializer, responses={200: dict}
    )
    def put(self, request, campaign_id: str):
        campaign = self.campaign(campaign_id)
        body = self.body()
        self.read_only_check(body)
        fields = _validated(CampaignInputSerializer, body, partial=True)
        if campaign.status != CampaignStatus.DRAFT:
            raise invalid_state(services.NOT_DRAFT_MESSAGE, "not_draft")
        try:
            campaign = services.campaign_update(
                campaign=campaign,
                actor=self.actor,
                changes=fields,
                authority=Authority.api_key("campaigns:write"),
            )
        except services.CampaignError as exc:
            raise _service_error(exc) from exc
        return self.ok(campaign_data(campaign))

    patch = put

    @extend_schema(summary="Delete a campaign (API-29)", responses={200: dict})
    def delete(self, request, campaign_id: str):
        campaign = self.campaign(campaign_id)
        try:
            services.campaign_delete(
                campaign=campaign, actor=self.actor, authority=Authority.api_key("campaigns:write")
            )
        except services.CampaignError as exc:
            raise _service_error(exc) from exc
        return self.deleted(campaign.pk)


class CampaignDuplicateView(CampaignsView):
    required_scope = "campaigns:write"

    @extend_schema(summary="Duplicate a campaign (API-29)", request=None, responses={201: dict})
    def post(self, request, campaign_id: str):
        copy = services.campaign_duplicate(
            campaign=self.campaign(campaign_id),
            actor=self.actor,
            authority=Authority.api_key(self.required_scope),
        )
        return self.created(campaign_data(copy))


class CampaignTransitionView(CampaignsView):
    required_scope = "campaigns:send"
    verb = ""

    @extend_schema(summary="Campaign transition (API-29)", request=dict, responses={200: dict})
    def post(self, request, campaign_id: str):
        campaign = self.campaign(campaign_id)
        common = {
            "campaign_id": campaign.pk,
            "organization_id": self.organization_id,
            "actor": self.actor,
            "authority": Authority.api_key(self.required_scope),
        }
        if self.verb == "schedule":
            body = self.body(required=False)
            if "scheduledAt" not in body:
                raise invalid_input("scheduledAt is required", field="scheduledAt")
            scheduled_at = parse_iso(body["scheduledAt"], field="scheduledAt")
            fields = _validated(ScheduleInputSerializer, {**body, "scheduledAt": scheduled_at.isoformat()})
            outcome = services.campaign_schedule(
                **common,
                scheduled_at=scheduled_at,
                use_recipient_timezone=fields.get("use_recipient_timezone", False),
                scheduled_hour=fields.get("scheduled_hour"),
                scheduled_minute=fields.get("scheduled_minute"),
            )
        else:
            action = {
                "unschedule": services.campaign_unschedule,
                "send": services.campaign_send_now,
                "cancel": services.campaign_cancel,
            }[self.verb]
            outcome = action(**common)
        if not outcome.ok:
            raise outcome_error(outcome)
        return self.transitioned(campaign_data(Campaign.objects.get(pk=campaign.pk)), outcome)


def transition_view(verb: str) -> type[CampaignTransitionView]:
    return type(f"Campaign{verb.title()}View", (CampaignTransitionView,), {"verb": verb})


class AbTestView(CampaignsView):
    action = ""

    def scope_for(self, method: str) -> str | None:
        return "campaigns:send" if self.action == "declare-winner" else "campaigns:write"

    @extend_schema(summary="A/B test action (API-30)", request=dict, responses={200: dict})
    def post(self, request, campaign_id: str):
        campaign = self.campaign(campaign_id)
        authority = Authority.api_key(self.scope_for("POST") or "")
        if self.action == "enable":
            body = self.body()
            try:
                config = abtest.ab_config_clean(self.organization_id, body)
            except abtest.AbConfigError as exc:
                raise invalid_input(exc.message, field=exc.field) from exc
            outcome = abtest.ab_enable(
                campaign=campaign, config=config, actor=self.actor, authority=authority
            )
        elif self.action == "disable":
            outcome = abtest.ab_disable(campaign=campaign, actor=self.actor, authority=authority)
        else:
            fields = _validated(DeclareWinnerInputSerializer, self.body())
            outcome = abtest.ab_declare_winner(
                campaign_id=campaign.pk,
                winner=fields["winner"],
                actor=self.actor,
                organization_id=self.organization_id,
                authority=authority,
            )
        if not outcome.ok:
            raise outcome_error(outcome)
        return self.transitioned(campaign_data(Campaign.objects.get(pk=campaign.pk)), outcome)


def ab_view(action: str) -> type[AbTestView]:
    return type(f"AbTest{action.title().replace('-', '')}View", (AbTestView,), {"action": action})


class PreflightView(CampaignsView):
    required_scope = "campaigns:read"

    @extend_schema(summary="Pre-flight without side effects (API-30)", responses={200: dict})
    def get(self, request, campaign_id: str):
        campaign = self.campaign(campaign_id)
        raw = self.query("scheduledAt")
        scheduled_at = parse_iso(raw, field="scheduledAt") if raw else None
        return self.ok(validate_ready_to_send(campaign, scheduled_at=scheduled_at).as_dict())


class StatsView(CampaignsView):
    required_scope = "campaigns:read"

    @extend_schema(summary="Campaign stats, ever-reached (API-31)", responses={200: dict})
    def get(self, request, campaign_id: str):
        return self.ok(stats_data(self.campaign(campaign_id)))


class SendListView(CampaignsView):
    required_scope = "campaigns:read"

    @extend_schema(summary="The send rows of a campaign (API-31)", responses={200: dict})
    def get(self, request, campaign_id: str):
        from delivery.models import EmailSend, SendStatus

        campaign = self.campaign(campaign_id)
        queryset = EmailSend.objects.filter(
            campaign_id=campaign.pk, organization_id=self.organization_id, deleted_at__isnull=True
        )
        status = self.query("status")
        if status:
            values = [s.strip() for s in status.split(",") if s.strip()]
            for value in values:
                if value not in SendStatus.values:
                    raise invalid_input(f"Invalid status: {value}", field="status")
            queryset = queryset.filter(status__in=values)
        variant = self.query("variant")
        if variant:
            if variant not in ("A", "B"):
                raise invalid_input(f"Invalid variant: {variant}", field="variant")
            queryset = queryset.filter(ab_variant=variant)
        term = self.search_term()
        if term:
            queryset = queryset.filter(contact_email__icontains=term)
        return self.paginated(
            queryset,
            lambda row: dict(SendRowOutputSerializer(row).data),
            order=("-queued_at", "-id"),
            list_key=f"campaigns/{campaign.pk}/sends",
        )
