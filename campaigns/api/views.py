"""`/api/v1` views of campaigns (API-29 … API-31). Thin: serializers check the request, `campaigns.services`
/ `campaigns.abtest` act, serializers answer with the resource (and the transition object).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import abtest, services
from campaigns.api.serializers import (
    AbTestConfigSerializer,
    CampaignCreateSerializer,
    CampaignListQuerySerializer,
    CampaignSendSerializer,
    CampaignSerializer,
    CampaignStatsSerializer,
    CampaignWriteSerializer,
    DeclareWinnerSerializer,
    PreflightQuerySerializer,
    PreflightSerializer,
    ScheduleSerializer,
    SendListQuerySerializer,
    TestSendResultSerializer,
    TestSendSerializer,
    campaign_stats,
)
from campaigns.models import Campaign, CampaignStatus
from campaigns.preflight import validate_ready_to_send
from owlat.api.base import ApiView, filter_by_params, validated
from owlat.api.errors import ApiError, invalid_input, invalid_state
from owlat.api.permissions import required_scope
from owlat.api.schema import DeletedSerializer, envelope, errors, transitioned_envelope
from owlat.permissions import Authority

CAMPAIGN_ID = OpenApiParameter(
    "campaign_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The campaign's id."
)
DRAFT_ONLY = "Only while the campaign is a draft (422 `not_draft` otherwise)."


def _service_error(exc: services.CampaignError) -> ApiError:
    if exc.category == "invalid_input":
        return invalid_input(exc.message, field=exc.field)
    if exc.category == "forbidden":
        return ApiError("forbidden", exc.message)
    return invalid_state(exc.message, exc.reason)


def _call(fn: Any, **kwargs: Any) -> Any:
    """Call a service; its refusals become the envelope (400 naming the field, 403, or 422 with a reason)."""
    try:
        return fn(**kwargs)
    except services.CampaignError as exc:
        raise _service_error(exc) from exc


class CampaignsView(ApiView):
    feature_flag = "campaigns"

    def get_campaign(self, campaign_id: str) -> Campaign:
        return self.get_owned(Campaign, campaign_id, "campaign")

    @property
    def authority(self) -> Authority:
        """What grants this request: the API key's scope for the method."""
        return Authority.api_key(required_scope(self, self.request.method))

    def detail(self, campaign_id: Any) -> dict[str, Any]:
        return CampaignSerializer(Campaign.objects.get(pk=campaign_id)).data

    def answer(self, campaign: Campaign, outcome: Any) -> Response:
        """200 with the campaign after a transition and the transition object; a refusal → 404 / 422."""
        return self.transitioned(self.detail(campaign.pk) if outcome.ok else None, outcome)


# --- campaigns (API-29) --------------------------------------------------------------------------------------


@extend_schema(tags=["Campaigns"])
class CampaignListView(CampaignsView):
    required_scopes = {"GET": "campaigns:read", "POST": "campaigns:write"}
    list_key = "campaigns"

    @extend_schema(
        operation_id="campaigns_list",
        summary="List campaigns",
        description="Newest first. Scope `campaigns:read`.",
        parameters=[CampaignListQuerySerializer],
        responses={200: CampaignSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        params = validated(CampaignListQuerySerializer, request.query_params)
        queryset = filter_by_params(
            Campaign.objects.filter(organization_id=self.organization_id),
            params,
            status="status__in",
            search="name__icontains",
        )
        return self.list_response(queryset, CampaignSerializer)

    @extend_schema(
        operation_id="campaigns_create",
        summary="Create a campaign",
        description="A new campaign is a draft: choose its template, sender and audience, then schedule or "
        "send it. Scope `campaigns:write`.",
        request=CampaignCreateSerializer,
        responses={201: envelope(CampaignSerializer), **errors(400)},
    )
    def post(self, request: Request) -> Response:
        fields = validated(CampaignCreateSerializer, request.data)
        campaign = _call(
            services.campaign_create,
            organization_id=self.organization_id,
            actor=self.actor,
            fields=fields,
            authority=self.authority,
        )
        return self.created(CampaignSerializer(campaign).data)


@extend_schema(tags=["Campaigns"], parameters=[CAMPAIGN_ID])
class CampaignDetailView(CampaignsView):
    required_scopes = {
        "GET": "campaigns:read",
        "PUT": "campaigns:write",
        "PATCH": "campaigns:write",
        "DELETE": "campaigns:write",
    }

    @extend_schema(
        operation_id="campaigns_retrieve",
        summary="Get a campaign",
        description="With its counters and A/B test. Scope `campaigns:read`.",
        responses={200: envelope(CampaignSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, campaign_id: str) -> Response:
        return self.ok(CampaignSerializer(self.get_campaign(campaign_id)).data)

    @extend_schema(
        operation_id="campaigns_update",
        summary="Update a campaign",
        description=f"Only the keys sent change (PUT and PATCH alike). {DRAFT_ONLY} Scope `campaigns:write`.",
        request=CampaignWriteSerializer,
        responses={200: envelope(CampaignSerializer), **errors(400, 404, 422)},
    )
    def put(self, request: Request, campaign_id: str) -> Response:
        campaign = self.get_campaign(campaign_id)
        fields = validated(CampaignWriteSerializer, request.data)
        if campaign.status != CampaignStatus.DRAFT:
            raise invalid_state(services.NOT_DRAFT_MESSAGE, "not_draft")
        campaign = _call(
            services.campaign_update,
            campaign=campaign,
            actor=self.actor,
            changes=fields,
            authority=self.authority,
        )
        return self.ok(CampaignSerializer(campaign).data)

    patch = put

    @extend_schema(
        operation_id="campaigns_destroy",
        summary="Delete a campaign",
        description="Refused while it is sending (422 `campaign_sending`). Scope `campaigns:write`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404, 422)},
    )
    def delete(self, request: Request, campaign_id: str) -> Response:
        campaign = self.get_campaign(campaign_id)
        _call(services.campaign_delete, campaign=campaign, actor=self.actor, authority=self.authority)
        return self.deleted(campaign.pk)


@extend_schema(tags=["Campaigns"], parameters=[CAMPAIGN_ID])
class CampaignDuplicateView(CampaignsView):
    required_scopes = {"POST": "campaigns:write"}
    empty_body_methods = frozenset({"POST"})

    @extend_schema(
        operation_id="campaigns_duplicate",
        summary="Duplicate a campaign",
        description='The copy, named "Copy of <name>", is a draft with the same template, sender, subject '
        "and audience. Scope `campaigns:write`.",
        request=None,
        responses={201: envelope(CampaignSerializer), **errors(400, 404)},
    )
    def post(self, request: Request, campaign_id: str) -> Response:
        copy = _call(
            services.campaign_duplicate,
            campaign=self.get_campaign(campaign_id),
            actor=self.actor,
            authority=self.authority,
        )
        return self.created(CampaignSerializer(copy).data)


@extend_schema(tags=["Campaigns"], parameters=[CAMPAIGN_ID])
class CampaignTestSendView(CampaignsView):
    required_scopes = {"POST": "campaigns:write"}

    @extend_schema(
        operation_id="campaigns_test_send",
        summary="Send a test of a campaign",
        description="The campaign as it would go — subject (marked `[Test]`), sender with display name, "
        "template, variant and language — to up to 5 addresses. A test is not tracked, creates no campaign "
        "send row and is in no contact's history; any status. 422 `no_template` without a template. Scope "
        "`campaigns:write`.",
        request=TestSendSerializer,
        responses={202: envelope(TestSendResultSerializer, "TestSend"), **errors(400, 404, 422)},
    )
    def post(self, request: Request, campaign_id: str) -> Response:
        from campaigns.sender import campaign_sender
        from campaigns.testsend import campaign_test_send

        campaign = self.get_campaign(campaign_id)
        fields = validated(TestSendSerializer, request.data)
        sends = _call(campaign_test_send, campaign=campaign, authority=self.authority, **fields)
        sender = campaign_sender(campaign)
        return self.accepted(
            TestSendResultSerializer(
                {"recipients": [s.email for s in sends], "fromEmail": sender.email, "fromName": sender.name}
            ).data
        )


# --- transitions (API-29) ---------------------------------------------------------------------------------------

TRANSITIONS = {
    "schedule": (
        "Schedule a campaign",
        "Sends it at `scheduledAt` (or, with `useRecipientTimezone`, at `scheduledHour:scheduledMinute` in "
        "each recipient's time zone). On a scheduled campaign this reschedules it (`transition.applied` is "
        "`rescheduled`). The pre-flight checks run first; a failing one answers 422 with its reason.",
    ),
    "unschedule": ("Unschedule a campaign", "Returns a scheduled campaign to draft."),
    "send": (
        "Send a campaign now",
        "A draft or scheduled campaign starts sending. The pre-flight checks run first; a failing one "
        "answers 422 with its reason.",
    ),
    "cancel": (
        "Cancel a campaign",
        "A scheduled campaign will not be sent; a sending or paused one stops for good: the messages not yet "
        "handed to the provider are never sent (their send rows end `cancelled`). This is final.",
    ),
    "pause": (
        "Pause a sending campaign",
        "No more of its messages are handed to the provider (within a few seconds; the ones already on the "
        "wire complete). Resume continues where it stopped.",
    ),
    "resume": (
        "Resume a paused campaign",
        "It goes on sending where it stopped; nobody already mailed is mailed again.",
    ),
}


class CampaignTransitionView(CampaignsView):
    required_scopes = {"POST": "campaigns:send"}
    empty_body_methods = frozenset({"POST"})
    verb: str = ""

    def post(self, request: Request, campaign_id: str) -> Response:
        campaign = self.get_campaign(campaign_id)
        common = {
            "campaign_id": campaign.pk,
            "organization_id": self.organization_id,
            "actor": self.actor,
            "authority": self.authority,
        }
        if self.verb == "schedule":
            fields = validated(ScheduleSerializer, request.data)
            outcome = services.campaign_schedule(
                **common,
                scheduled_at=fields["scheduled_at"],
                use_recipient_timezone=fields.get("use_recipient_timezone", False),
                scheduled_hour=fields.get("scheduled_hour"),
                scheduled_minute=fields.get("scheduled_minute"),
            )
        else:
            action = {
                "unschedule": services.campaign_unschedule,
                "send": services.campaign_send_now,
                "cancel": services.campaign_cancel,
                "pause": services.campaign_pause,
                "resume": services.campaign_resume,
            }[self.verb]
            outcome = action(**common)
        return self.answer(campaign, outcome)


def transition_view(verb: str) -> type[CampaignTransitionView]:
    """`POST campaigns/{id}/<verb>`: 200 with `transition`, or 422 `invalid_state` with the reason."""
    summary, description = TRANSITIONS[verb]

    @extend_schema(
        operation_id=f"campaigns_{verb}",
        summary=summary,
        description=f"{description} Scope `campaigns:send`.",
        tags=["Campaigns"],
        parameters=[CAMPAIGN_ID],
        request=ScheduleSerializer if verb == "schedule" else None,
        responses={200: transitioned_envelope(CampaignSerializer), **errors(400, 404, 422)},
    )
    def post(self: CampaignTransitionView, request: Request, campaign_id: str) -> Response:
        return CampaignTransitionView.post(self, request, campaign_id)

    return type(f"Campaign{verb.title()}View", (CampaignTransitionView,), {"verb": verb, "post": post})


# --- A/B tests and pre-flight (API-30) --------------------------------------------------------------------------

AB_ACTIONS = {
    "enable": (
        "campaigns:write",
        AbTestConfigSerializer,
        "Make a campaign an A/B test",
        f"Variant B differs in subject or content; a replaced config starts over. {DRAFT_ONLY}",
    ),
    "disable": ("campaigns:write", None, "Stop a campaign being an A/B test", DRAFT_ONLY),
    "declare-winner": (
        "campaigns:send",
        DeclareWinnerSerializer,
        "Declare the winning variant",
        "While the test is running; the rest of the audience then gets the winner. 422 `not_ab_test` or "
        "`not_testing` otherwise.",
    ),
}


class AbTestView(CampaignsView):
    action: str = ""

    def post(self, request: Request, campaign_id: str) -> Response:
        campaign = self.get_campaign(campaign_id)
        if self.action == "enable":
            config = validated(
                AbTestConfigSerializer, request.data, context={"organization_id": self.organization_id}
            )
            outcome = abtest.ab_enable(
                campaign=campaign, config=config, actor=self.actor, authority=self.authority
            )
        elif self.action == "disable":
            outcome = abtest.ab_disable(campaign=campaign, actor=self.actor, authority=self.authority)
        else:
            fields = validated(DeclareWinnerSerializer, request.data)
            outcome = abtest.ab_declare_winner(
                campaign_id=campaign.pk,
                winner=fields["winner"],
                actor=self.actor,
                organization_id=self.organization_id,
                authority=self.authority,
            )
        return self.answer(campaign, outcome)


def ab_view(action: str) -> type[AbTestView]:
    """`POST campaigns/{id}/ab-test/<action>`: the `transition` object shows the A/B test's states."""
    scope, request_serializer, summary, description = AB_ACTIONS[action]

    @extend_schema(
        operation_id=f"campaigns_ab_test_{action.replace('-', '_')}",
        summary=summary,
        description=f"{description} Scope `{scope}`.",
        tags=["Campaigns"],
        parameters=[CAMPAIGN_ID],
        request=request_serializer,
        responses={200: transitioned_envelope(CampaignSerializer), **errors(400, 404, 422)},
    )
    def post(self: AbTestView, request: Request, campaign_id: str) -> Response:
        return AbTestView.post(self, request, campaign_id)

    attrs: dict[str, Any] = {"action": action, "post": post, "required_scopes": {"POST": scope}}
    if request_serializer is None:
        attrs["empty_body_methods"] = frozenset({"POST"})
    return type(f"AbTest{action.title().replace('-', '')}View", (AbTestView,), attrs)


@extend_schema(tags=["Campaigns"], parameters=[CAMPAIGN_ID])
class PreflightView(CampaignsView):
    required_scopes = {"GET": "campaigns:read"}

    @extend_schema(
        operation_id="campaigns_preflight",
        summary="Check whether a campaign can be sent",
        description="Runs the checks that schedule and send run, without changing anything; always 200, "
        "with `ready`, the first failing `reason` and `message`, and `warnings`. Scope `campaigns:read`.",
        parameters=[PreflightQuerySerializer],
        responses={200: envelope(PreflightSerializer, "Preflight"), **errors(400, 404)},
    )
    def get(self, request: Request, campaign_id: str) -> Response:
        campaign = self.get_campaign(campaign_id)
        params = validated(PreflightQuerySerializer, request.query_params)
        result = validate_ready_to_send(campaign, scheduled_at=params.get("scheduledAt"))
        return self.ok(PreflightSerializer(result.as_dict()).data)


# --- stats and send rows (API-31) -------------------------------------------------------------------------------


@extend_schema(tags=["Campaigns"], parameters=[CAMPAIGN_ID])
class StatsView(CampaignsView):
    required_scopes = {"GET": "campaigns:read"}

    @extend_schema(
        operation_id="campaigns_stats_retrieve",
        summary="Get a campaign's statistics",
        description="Counts and rates of what its messages ever reached, per variant for A/B tests. "
        "Scope `campaigns:read`.",
        responses={200: envelope(CampaignStatsSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, campaign_id: str) -> Response:
        return self.ok(CampaignStatsSerializer(campaign_stats(self.get_campaign(campaign_id))).data)


@extend_schema(tags=["Campaigns"], parameters=[CAMPAIGN_ID])
class SendListView(CampaignsView):
    required_scopes = {"GET": "campaigns:read"}
    ordering = ("-queued_at", "-id")

    @extend_schema(
        operation_id="campaigns_sends_list",
        summary="List a campaign's messages",
        description="One row per recipient, newest first. Scope `campaigns:read`.",
        parameters=[SendListQuerySerializer],
        responses={200: CampaignSendSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, campaign_id: str) -> Response:
        from delivery.models import EmailSend

        campaign = self.get_campaign(campaign_id)
        params = validated(SendListQuerySerializer, request.query_params)
        queryset = filter_by_params(
            EmailSend.objects.filter(
                campaign_id=campaign.pk, organization_id=self.organization_id, deleted_at__isnull=True
            ),
            params,
            status="status__in",
            variant="ab_variant",
            search="contact_email__icontains",
        )
        self.list_key = f"campaigns/{campaign.pk}/sends"
        return self.list_response(queryset, CampaignSendSerializer)
