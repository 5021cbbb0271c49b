"""`/api/v1` views of the automations app: the events intake (AUT-30, API-21) and automations, steps,
transitions, runs and stats (API-27, API-28). Thin: serializers check the body, `automations.services` /
`automations.lifecycle` act, serializers answer.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from automations import services
from automations.api.serializers import (
    AUTOMATION_CREATE,
    STEP_CREATE,
    AutomationCountersSerializer,
    AutomationCreateSerializer,
    AutomationListQuerySerializer,
    AutomationSerializer,
    AutomationSummarySerializer,
    AutomationUpdateSerializer,
    EventRecordedSerializer,
    EventSerializer,
    RunListQuerySerializer,
    RunSerializer,
    StepCreateSerializer,
    StepReorderSerializer,
    StepRunSerializer,
    StepUpdateSerializer,
)
from automations.counters import counters_overlay
from automations.lifecycle import PUBLIC_ACTIONS
from automations.models import Automation, AutomationRun, AutomationStepRun
from owlat.api.base import ApiView, filter_by_params, iso, require_uuid, validated
from owlat.api.errors import invalid_input, invalid_state, not_found
from owlat.api.schema import DeletedSerializer, envelope, errors, transitioned_envelope
from owlat.permissions import Authority

AUTOMATION_ID = OpenApiParameter(
    "automation_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The automation's id."
)
STEP_ID = OpenApiParameter("step_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The step's id.")
RUN_ID = OpenApiParameter("run_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The run's id.")
DRAFT_ONLY = "Only while the automation is a draft (422 otherwise)."


def _call(fn: Any, **kwargs: Any) -> Any:
    """Call a service; its refusals become the envelope (400 naming the field, 404, or 422 with a reason)."""
    try:
        return fn(**kwargs)
    except services.AutomationInvalid as exc:
        raise invalid_input(exc.message, field=exc.field) from exc
    except services.AutomationRefused as exc:
        if exc.reason.endswith("_not_found"):
            raise not_found(exc.message) from exc
        raise invalid_state(exc.message, exc.reason) from exc


class AutomationsView(ApiView):
    feature_flag = "automations"

    def get_automation(self, automation_id: str) -> Automation:
        return self.get_owned(Automation, automation_id, "automation")

    def detail(self, automation_id: Any) -> dict[str, Any]:
        return AutomationSerializer(Automation.objects.get(pk=automation_id)).data

    def change(self, automation: Automation, service: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
        """`service(automation_id=, organization_id=, **kwargs)` on this automation (its refusals → the envelope,
        `_call`); answers the automation as it is after, with its steps."""
        _call(service, automation_id=automation.pk, organization_id=self.organization_id, **kwargs)
        return self.detail(automation.pk)


# --- automations ----------------------------------------------------------------------------------------------


@extend_schema(tags=["Automations"])
class AutomationListView(AutomationsView):
    required_scopes = {"GET": "automations:read", "POST": "automations:write"}
    list_key = "automations"

    @extend_schema(
        operation_id="automations_list",
        summary="List automations",
        description="Newest first, without their steps. Scope `automations:read`.",
        parameters=[AutomationListQuerySerializer],
        responses={200: AutomationSummarySerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        params = validated(AutomationListQuerySerializer, request.query_params)
        queryset = Automation.objects.filter(organization_id=self.organization_id).annotate(
            step_count=Count("steps")
        )
        queryset = filter_by_params(
            queryset, params, status="status__in", triggerType="trigger_type__in", search="name__icontains"
        )
        page = self.paginate_queryset(queryset)
        page = [copy.copy(a) for a in page]
        counters_overlay(page)  # stored + pending deltas for the whole page at once
        return self.get_paginated_response(AutomationSummarySerializer(page, many=True).data)

    @extend_schema(
        operation_id="automations_create",
        summary="Create an automation",
        description="A new automation is a draft; activate it when its steps are in place. "
        "Scope `automations:write`.",
        request=AUTOMATION_CREATE,
        responses={201: envelope(AutomationSerializer), **errors(400, 404)},
    )
    def post(self, request: Request) -> Response:
        fields = validated(AutomationCreateSerializer, request.data)
        automation = _call(
            services.automation_create,
            organization_id=self.organization_id,
            actor=self.actor,
            name=fields["name"],
            trigger_type=fields["triggerType"],
            trigger_config=fields.get("triggerConfig"),
            description=fields.get("description"),
            steps=fields.get("steps", []),
            unsubscribe_footer=fields.get("unsubscribeFooter", True),
            track_engagement=fields.get("trackEngagement", False),
        )
        return self.created(self.detail(automation.pk))


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID])
class AutomationDetailView(AutomationsView):
    required_scopes = {
        "GET": "automations:read",
        "PUT": "automations:write",
        "PATCH": "automations:write",
        "DELETE": "automations:write",
    }
    empty_body_methods = frozenset({"PUT", "PATCH"})

    @extend_schema(
        operation_id="automations_retrieve",
        summary="Get an automation",
        description="With its steps, in order. Scope `automations:read`.",
        responses={200: envelope(AutomationSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, automation_id: str) -> Response:
        return self.ok(AutomationSerializer(self.get_automation(automation_id)).data)

    @extend_schema(
        operation_id="automations_update",
        summary="Update an automation",
        description="Only the keys sent change (PUT and PATCH alike). Name and description in any state; "
        "the trigger only in draft. Steps change through the step endpoints. Scope `automations:write`.",
        request=AutomationUpdateSerializer,
        responses={200: envelope(AutomationSerializer), **errors(400, 404, 422)},
    )
    def put(self, request: Request, automation_id: str) -> Response:
        fields = validated(AutomationUpdateSerializer, request.data)
        answer = self.change(
            self.get_automation(automation_id),
            services.automation_update,
            name=fields.get("name", services._UNSET),
            description=fields.get("description", services._UNSET),
            trigger_type=fields.get("triggerType", services._UNSET),
            trigger_config=fields.get("triggerConfig", services._UNSET),
            unsubscribe_footer=fields.get("unsubscribeFooter", services._UNSET),
            track_engagement=fields.get("trackEngagement", services._UNSET),
        )
        return self.ok(answer)

    patch = put

    @extend_schema(
        operation_id="automations_destroy",
        summary="Delete an automation",
        description="Refused while active (pause it first). Scope `automations:write`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404, 422)},
    )
    def delete(self, request: Request, automation_id: str) -> Response:
        automation = self.get_automation(automation_id)
        _call(
            services.automation_delete,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            actor=self.actor,
        )
        return self.deleted(automation.pk)


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID])
class AutomationDuplicateView(AutomationsView):
    required_scopes = {"POST": "automations:write"}
    empty_body_methods = frozenset({"POST"})

    @extend_schema(
        operation_id="automations_duplicate",
        summary="Duplicate an automation",
        description="The copy, with the same trigger and steps, is a draft. Scope `automations:write`.",
        request=None,
        responses={201: envelope(AutomationSerializer), **errors(400, 404)},
    )
    def post(self, request: Request, automation_id: str) -> Response:
        automation = self.get_automation(automation_id)
        copy = _call(
            services.automation_duplicate,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            actor=self.actor,
        )
        return self.created(self.detail(copy.pk))


TRANSITIONS = {
    "activate": "Activate an automation: from now on its trigger starts runs. Needs at least one step.",
    "pause": "Pause an automation: no new runs start; running runs wait.",
    "resume": "Resume a paused automation.",
    "revert-to-draft": "Return a paused automation to draft so its trigger and steps can be edited.",
}


class AutomationTransitionView(AutomationsView):
    required_scopes = {"POST": "automations:write"}
    empty_body_methods = frozenset({"POST"})
    verb: str = ""

    def post(self, request: Request, automation_id: str) -> Response:
        automation = self.get_automation(automation_id)
        outcome = PUBLIC_ACTIONS[self.verb](
            automation_id=automation.pk,
            organization_id=self.organization_id,
            actor=self.actor,
            authority=Authority.api_key(self.required_scopes["POST"]),
        )
        if not outcome.ok:
            return self.transitioned(None, outcome)
        return self.transitioned(self.detail(automation.pk), outcome)


def transition_view(verb: str) -> type[AutomationTransitionView]:
    """`POST automations/{id}/<verb>` (AUT-13): 200 with `transition`, or 422 `invalid_state` with the reason."""

    @extend_schema(
        operation_id=f"automations_{verb.replace('-', '_')}",
        summary=TRANSITIONS[verb].split(":")[0].split(".")[0],
        description=f"{TRANSITIONS[verb]} Doing it twice is recorded, not an error. Scope `automations:write`.",
        tags=["Automations"],
        parameters=[AUTOMATION_ID],
        request=None,
        responses={200: transitioned_envelope(AutomationSerializer), **errors(400, 404, 422)},
    )
    def post(self: AutomationTransitionView, request: Request, automation_id: str) -> Response:
        return AutomationTransitionView.post(self, request, automation_id)

    name = f"Automation{verb.title().replace('-', '')}View"
    return type(name, (AutomationTransitionView,), {"verb": verb, "post": post})


# --- steps ----------------------------------------------------------------------------------------------------


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID])
class StepListView(AutomationsView):
    required_scopes = {"POST": "automations:write"}

    @extend_schema(
        operation_id="automations_steps_create",
        summary="Add a step",
        description=f"Answers the automation with its steps. {DRAFT_ONLY} Scope `automations:write`.",
        request=STEP_CREATE,
        responses={201: envelope(AutomationSerializer), **errors(400, 404, 422)},
    )
    def post(self, request: Request, automation_id: str) -> Response:
        fields = validated(StepCreateSerializer, request.data)
        answer = self.change(
            self.get_automation(automation_id),
            services.step_add,
            step_type=fields["stepType"],
            config=fields.get("config"),
            step_index=fields.get("stepIndex"),
        )
        return self.created(answer)


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID])
class StepReorderView(AutomationsView):
    required_scopes = {"POST": "automations:write"}

    @extend_schema(
        operation_id="automations_steps_reorder",
        summary="Reorder steps",
        description=f"Branch targets follow their steps. {DRAFT_ONLY} Scope `automations:write`.",
        request=StepReorderSerializer,
        responses={200: envelope(AutomationSerializer), **errors(400, 404, 422)},
    )
    def post(self, request: Request, automation_id: str) -> Response:
        fields = validated(StepReorderSerializer, request.data)
        answer = self.change(
            self.get_automation(automation_id), services.steps_reorder, step_ids=fields["stepIds"]
        )
        return self.ok(answer)


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID, STEP_ID])
class StepDetailView(AutomationsView):
    required_scopes = {
        "PUT": "automations:write",
        "PATCH": "automations:write",
        "DELETE": "automations:write",
    }
    empty_body_methods = frozenset({"PUT", "PATCH"})

    @extend_schema(
        operation_id="automations_steps_update",
        summary="Update a step",
        description=f"Only the keys sent change. {DRAFT_ONLY} Scope `automations:write`.",
        request=StepUpdateSerializer,
        responses={200: envelope(AutomationSerializer), **errors(400, 404, 422)},
    )
    def put(self, request: Request, automation_id: str, step_id: str) -> Response:
        fields = validated(StepUpdateSerializer, request.data)
        changes = {"step_type": fields["stepType"]} if "stepType" in fields else {}
        if "config" in fields:
            changes["config"] = fields["config"]
        answer = self.change(
            self.get_automation(automation_id),
            services.step_update,
            step_id=require_uuid(step_id, "step"),
            **changes,
        )
        return self.ok(answer)

    patch = put

    @extend_schema(
        operation_id="automations_steps_destroy",
        summary="Remove a step",
        description=f"Answers the automation with its remaining steps. {DRAFT_ONLY} Scope `automations:write`.",
        responses={200: envelope(AutomationSerializer), **errors(400, 404, 422)},
    )
    def delete(self, request: Request, automation_id: str, step_id: str) -> Response:
        answer = self.change(
            self.get_automation(automation_id),
            services.step_remove,
            step_id=require_uuid(step_id, "step"),
        )
        return self.ok(answer)


# --- runs and stats (API-28) -----------------------------------------------------------------------------------


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID])
class RunListView(AutomationsView):
    required_scopes = {"GET": "automations:read"}
    ordering = ("-started_at", "-id")

    @extend_schema(
        operation_id="automations_runs_list",
        summary="List an automation's runs",
        description="Most recently started first. Scope `automations:read`.",
        parameters=[RunListQuerySerializer],
        responses={200: RunSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, automation_id: str) -> Response:
        automation = self.get_automation(automation_id)
        params = validated(RunListQuerySerializer, request.query_params)
        queryset = AutomationRun.objects.filter(automation=automation)
        queryset = filter_by_params(queryset, params, status="status__in")
        if params.get("contactId"):
            queryset = queryset.filter(contact_id=require_uuid(params["contactId"], "contact"))
        self.list_key = f"automations/{automation.pk}/runs"
        return self.list_response(queryset, RunSerializer)


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID, RUN_ID])
class RunDetailView(AutomationsView):
    required_scopes = {"GET": "automations:read"}

    def get_run(self, automation_id: str, run_id: str) -> AutomationRun:
        automation = self.get_automation(automation_id)
        run = AutomationRun.objects.filter(pk=require_uuid(run_id, "run"), automation=automation).first()
        if run is None:
            raise not_found("Run not found")
        return run

    @extend_schema(
        operation_id="automations_runs_retrieve",
        summary="Get a run",
        description="One contact's way through the automation. Scope `automations:read`.",
        responses={200: envelope(RunSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, automation_id: str, run_id: str) -> Response:
        return self.ok(RunSerializer(self.get_run(automation_id, run_id)).data)


class StepRunListView(RunDetailView):
    ordering = ("scheduled_at", "step_index", "id")

    @extend_schema(
        operation_id="automations_runs_step_runs_list",
        summary="List a run's step runs",
        description="In schedule order. Scope `automations:read`.",
        responses={200: StepRunSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, automation_id: str, run_id: str) -> Response:
        run = self.get_run(automation_id, run_id)
        self.list_key = f"runs/{run.pk}/step-runs"
        return self.list_response(AutomationStepRun.objects.filter(run=run), StepRunSerializer)


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID])
class StatsView(AutomationsView):
    required_scopes = {"GET": "automations:read"}

    @extend_schema(
        operation_id="automations_stats_retrieve",
        summary="Get an automation's counters and funnel",
        description="Runs entered, active, completed and cancelled, and per step how many step runs are "
        "pending, executing, completed, failed or skipped. Scope `automations:read`.",
        responses={200: envelope(AutomationCountersSerializer, "AutomationCounters"), **errors(400, 404)},
    )
    def get(self, request: Request, automation_id: str) -> Response:
        automation = copy.copy(self.get_automation(automation_id))
        counters_overlay([automation])  # stored + pending deltas
        return self.ok(
            {
                "entered": automation.stats_entered,
                "active": automation.stats_active,
                "completed": automation.stats_completed,
                "cancelled": automation.stats_cancelled,
                "statsUpdatedAt": iso(automation.stats_updated_at),
                "funnel": services.automation_funnel(automation),
            }
        )


# --- events (AUT-30, API-21) -------------------------------------------------------------------------------------


@extend_schema(tags=["Events"])
class EventsView(ApiView):
    required_scopes = {"POST": "events:write"}
    # `event_record` is atomic on its own (one statement, or its own transaction), so the view opens none
    # (BEGIN and COMMIT were two of an event's round trips); with an Idempotency-Key it still does
    atomic = False

    @extend_schema(
        operation_id="events_create",
        summary="Send an event",
        description="Records an event for the contact with this email and starts the automations it "
        "triggers. Scope `events:write`.",
        request=EventSerializer,
        responses={201: envelope(EventRecordedSerializer, "EventRecorded"), **errors(400, 404)},
    )
    def post(self, request: Request) -> Response:
        from owlat.contacts import normalize_email

        fields = validated(EventSerializer, request.data)
        try:
            result = services.event_record(
                organization_id=self.organization_id,
                email=fields["email"],
                event_name=fields["eventName"],
                event_properties=fields.get("eventProperties"),
                create_contact=fields["createContactIfNotExists"],
                actor=self.actor,
            )
        except services.ContactNotFound:
            raise not_found(
                f'Contact with email "{normalize_email(fields["email"])}" not found. Set '
                "createContactIfNotExists: true to create the contact automatically."
            )
        return self.created(
            {
                "eventId": result.event_id,
                "contactId": result.contact_id,
                "eventName": result.event_name,
                "triggeredAutomations": result.triggered_automations,
                "contactCreated": result.contact_created,
            }
        )
