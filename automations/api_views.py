"""`/api/v1` views of the automations app: the events intake (AUT-30, API-21) and the extension endpoints for
automations, steps, transitions, runs and stats (API-27, API-28). Thin: validate the wire format, call
`automations.services` / `automations.lifecycle`, serialise.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema

from automations import services
from automations.lifecycle import PUBLIC_ACTIONS
from automations.models import (
    Automation,
    AutomationRun,
    AutomationStatus,
    AutomationStep,
    AutomationStepRun,
    RunStatus,
    TriggerType,
)
from owlat.api.base import iso, require_uuid
from owlat.api.errors import ApiError, invalid_input, invalid_state, not_found
from owlat.api.legacy import LegacyApiView as ApiView
from owlat.event_names import EVENT_NAME_MESSAGE, is_valid_event_name
from owlat.permissions import Authority

READ_ONLY_KEYS = (
    "id",
    "status",
    "stats",
    "consecutiveRunFailures",
    "activatedAt",
    "pausedAt",
    "createdAt",
    "updatedAt",
    "stepCount",
)


# --- serialisation (API-27, API-28) ---------------------------------------------------------------------------


def step_data(step: AutomationStep) -> dict[str, Any]:
    return {
        "id": str(step.pk),
        "stepIndex": step.step_index,
        "stepType": step.step_type,
        "config": step.config,
    }


def automation_data(automation: Automation, *, with_steps: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(automation.pk),
        "name": automation.name,
        "description": automation.description,
        "triggerType": automation.trigger_type,
        "triggerConfig": automation.trigger_config,
        "status": automation.status,
        "stats": {
            "entered": automation.stats_entered,
            "active": automation.stats_active,
            "completed": automation.stats_completed,
            "cancelled": automation.stats_cancelled,
        },
        "consecutiveRunFailures": automation.consecutive_run_failures,
        "activatedAt": iso(automation.activated_at),
        "pausedAt": iso(automation.paused_at),
        "createdAt": iso(automation.created_at),
        "updatedAt": iso(automation.updated_at),
    }
    if with_steps:
        data["steps"] = [
            step_data(s) for s in AutomationStep.objects.filter(automation=automation).order_by("step_index")
        ]
    else:
        data["stepCount"] = getattr(automation, "step_count", None)
        if data["stepCount"] is None:
            data["stepCount"] = AutomationStep.objects.filter(automation=automation).count()
    return data


def run_data(run: AutomationRun) -> dict[str, Any]:
    return {
        "id": str(run.pk),
        "automationId": str(run.automation_id),
        "contactId": str(run.contact_id),
        "status": run.status,
        "currentStepIndex": run.current_step_index,
        "stepsExecuted": run.steps_executed,
        "triggeredBy": run.triggered_by,
        "triggerData": run.trigger_data,
        "startedAt": iso(run.started_at),
        "completedAt": iso(run.completed_at),
        "nextStepAt": iso(run.next_step_at),
    }


def step_run_data(sr: AutomationStepRun) -> dict[str, Any]:
    return {
        "id": str(sr.pk),
        "stepId": str(sr.step_id) if sr.step_id else None,
        "stepIndex": sr.step_index,
        "stepType": sr.step_type,
        "status": sr.status,
        "scheduledAt": iso(sr.scheduled_at),
        "startedAt": iso(sr.started_at),
        "completedAt": iso(sr.completed_at),
        "delayUntil": iso(sr.delay_until),
        "emailSendId": sr.email_send_id,
        "errorMessage": sr.error_message,
        "retryCount": sr.retry_count,
        "note": sr.note,
    }


# --- helpers ---------------------------------------------------------------------------------------------------


def _service_error(exc: Exception) -> ApiError:
    if isinstance(exc, services.AutomationInvalid):
        return invalid_input(exc.message, field=exc.field)
    assert isinstance(exc, services.AutomationRefused)
    if exc.reason.endswith("_not_found"):
        return not_found(exc.message)
    return invalid_state(exc.message, exc.reason)


def _call(fn, **kwargs):
    try:
        return fn(**kwargs)
    except (services.AutomationInvalid, services.AutomationRefused) as exc:
        raise _service_error(exc) from exc


def _multi(view: ApiView, name: str, allowed: list[str]) -> list[str] | None:
    raw = view.query(name)
    if raw is None or raw == "":
        return None
    values = [v.strip() for v in raw.split(",") if v.strip()]
    for value in values:
        if value not in allowed:
            raise invalid_input(f"Invalid {name}: {value}", field=name)
    return values


def _optional_string(body: dict[str, Any], key: str) -> Any:
    if key not in body:
        return services._UNSET
    if not isinstance(body[key], str):
        raise invalid_input(f"{key} must be a string", field=key)
    return body[key]


class AutomationsView(ApiView):
    feature_flag = "automations"

    def automation(self, automation_id: str) -> Automation:
        pk = require_uuid(automation_id, "automation")
        automation = Automation.objects.filter(pk=pk, organization_id=self.organization_id).first()
        if automation is None:
            raise not_found("Automation not found")
        return automation

    def detail(self, automation_id: Any) -> dict[str, Any]:
        return automation_data(Automation.objects.get(pk=automation_id))


# --- automations ----------------------------------------------------------------------------------------------


class AutomationListView(AutomationsView):
    scopes = {"GET": "automations:read", "POST": "automations:write"}

    @extend_schema(
        operation_id="automations_list", summary="List automations (API-27)", responses={200: dict}
    )
    def get(self, request):
        from django.db.models import Count

        queryset = Automation.objects.filter(organization_id=self.organization_id).annotate(
            step_count=Count("steps")
        )
        statuses = _multi(self, "status", AutomationStatus.values)
        if statuses:
            queryset = queryset.filter(status__in=statuses)
        kinds = _multi(self, "triggerType", TriggerType.values)
        if kinds:
            queryset = queryset.filter(trigger_type__in=kinds)
        term = self.search_term()
        if term:
            queryset = queryset.filter(name__icontains=term)
        return self.paginated(
            queryset,
            lambda a: automation_data(a, with_steps=False),
            order=("-created_at", "-id"),
            list_key="automations",
        )

    @extend_schema(summary="Create an automation (API-27)", request=dict, responses={201: dict})
    def post(self, request):
        body = self.body()
        for key in READ_ONLY_KEYS:
            if key in body:
                raise invalid_input(f"{key} is read-only", field=key)
        if "name" not in body:
            raise invalid_input("name is required", field="name")
        if not isinstance(body["name"], str):
            raise invalid_input("name must be a string", field="name")
        if "triggerType" not in body:
            raise invalid_input("triggerType is required", field="triggerType")
        description = _optional_string(body, "description")
        steps = body.get("steps", [])
        if not isinstance(steps, list):
            raise invalid_input("steps must be an array", field="steps")
        automation = _call(
            services.automation_create,
            organization_id=self.organization_id,
            actor=self.actor,
            name=body["name"],
            trigger_type=body["triggerType"],
            trigger_config=body.get("triggerConfig"),
            description=None if description is services._UNSET else description,
            steps=steps,
        )
        return self.created(self.detail(automation.pk))


class AutomationDetailView(AutomationsView):
    scopes = {
        "GET": "automations:read",
        "PUT": "automations:write",
        "PATCH": "automations:write",
        "DELETE": "automations:write",
    }

    @extend_schema(summary="Get an automation with its steps (API-27)", responses={200: dict})
    def get(self, request, automation_id: str):
        return self.ok(automation_data(self.automation(automation_id)))

    @extend_schema(summary="Update an automation (API-27)", request=dict, responses={200: dict})
    def put(self, request, automation_id: str):
        body = self.body(required=False)
        for key in (*READ_ONLY_KEYS, "steps"):
            if key in body:
                raise invalid_input(f"{key} is read-only", field=key)
        name = _optional_string(body, "name")
        description = _optional_string(body, "description")
        automation = self.automation(automation_id)
        automation = _call(
            services.automation_update,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            name=name,
            description=description,
            trigger_type=body.get("triggerType", services._UNSET),
            trigger_config=body.get("triggerConfig", services._UNSET),
        )
        return self.ok(self.detail(automation.pk))

    patch = put

    @extend_schema(summary="Delete an automation (API-27)", responses={200: dict})
    def delete(self, request, automation_id: str):
        automation = self.automation(automation_id)
        _call(
            services.automation_delete,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            actor=self.actor,
        )
        return self.deleted(automation.pk)


class AutomationDuplicateView(AutomationsView):
    required_scope = "automations:write"

    @extend_schema(summary="Duplicate an automation as a draft (API-27)", request=None, responses={201: dict})
    def post(self, request, automation_id: str):
        automation = self.automation(automation_id)
        copy = _call(
            services.automation_duplicate,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            actor=self.actor,
        )
        return self.created(self.detail(copy.pk))


class AutomationTransitionView(AutomationsView):
    required_scope = "automations:write"
    verb: str = ""

    @extend_schema(summary="Lifecycle action (API-27, AUT-13)", request=None, responses={200: dict})
    def post(self, request, automation_id: str):
        automation = self.automation(automation_id)
        outcome = PUBLIC_ACTIONS[self.verb](
            automation_id=automation.pk,
            organization_id=self.organization_id,
            actor=self.actor,
            authority=Authority.api_key(self.required_scope),
        )
        if not outcome.ok:
            return self.transitioned(None, outcome)
        return self.transitioned(self.detail(automation.pk), outcome)


def transition_view(verb: str) -> type[AutomationTransitionView]:
    return type(f"Automation{verb.title().replace('-', '')}View", (AutomationTransitionView,), {"verb": verb})


# --- steps ----------------------------------------------------------------------------------------------------


def _step_body(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    if "id" in body:
        raise invalid_input("id is read-only", field="id")
    out: dict[str, Any] = {}
    if creating:
        if "stepType" not in body:
            raise invalid_input("stepType is required", field="stepType")
        if "config" not in body:
            raise invalid_input("config is required", field="config")
    if "stepType" in body:
        out["step_type"] = body["stepType"]
    if "config" in body:
        out["config"] = body["config"]
    return out


class StepListView(AutomationsView):
    required_scope = "automations:write"

    @extend_schema(summary="Add a step (draft only; API-27)", request=dict, responses={201: dict})
    def post(self, request, automation_id: str):
        body = self.body()
        fields = _step_body(body, creating=True)
        automation = self.automation(automation_id)
        _call(
            services.step_add,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            step_index=body.get("stepIndex"),
            **fields,
        )
        return self.created(self.detail(automation.pk))


class StepReorderView(AutomationsView):
    required_scope = "automations:write"

    @extend_schema(summary="Reorder steps (draft only; API-27)", request=dict, responses={200: dict})
    def post(self, request, automation_id: str):
        body = self.body()
        if "stepIds" not in body:
            raise invalid_input("stepIds is required", field="stepIds")
        automation = self.automation(automation_id)
        _call(
            services.steps_reorder,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            step_ids=body["stepIds"],
        )
        return self.ok(self.detail(automation.pk))


class StepDetailView(AutomationsView):
    scopes = {"PUT": "automations:write", "PATCH": "automations:write", "DELETE": "automations:write"}

    def _step_id(self, step_id: str):
        return require_uuid(step_id, "step")

    @extend_schema(summary="Update a step (draft only; API-27)", request=dict, responses={200: dict})
    def put(self, request, automation_id: str, step_id: str):
        fields = _step_body(self.body(required=False), creating=False)
        automation = self.automation(automation_id)
        _call(
            services.step_update,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            step_id=self._step_id(step_id),
            **fields,
        )
        return self.ok(self.detail(automation.pk))

    patch = put

    @extend_schema(summary="Remove a step (draft only; API-27)", responses={200: dict})
    def delete(self, request, automation_id: str, step_id: str):
        automation = self.automation(automation_id)
        _call(
            services.step_remove,
            automation_id=automation.pk,
            organization_id=self.organization_id,
            step_id=self._step_id(step_id),
        )
        return self.ok(self.detail(automation.pk))


# --- runs and stats (API-28) -----------------------------------------------------------------------------------


class RunListView(AutomationsView):
    required_scope = "automations:read"

    @extend_schema(
        operation_id="automation_runs_list",
        summary="List an automation's runs (API-28)",
        responses={200: dict},
    )
    def get(self, request, automation_id: str):
        automation = self.automation(automation_id)
        queryset = AutomationRun.objects.filter(automation=automation)
        statuses = _multi(self, "status", RunStatus.values)
        if statuses:
            queryset = queryset.filter(status__in=statuses)
        contact_id = self.query("contactId")
        if contact_id:
            queryset = queryset.filter(contact_id=require_uuid(contact_id, "contact"))
        return self.paginated(
            queryset, run_data, order=("-started_at", "-id"), list_key=f"automations/{automation.pk}/runs"
        )


class RunDetailView(AutomationsView):
    required_scope = "automations:read"

    def run(self, automation_id: str, run_id: str) -> AutomationRun:
        automation = self.automation(automation_id)
        run = AutomationRun.objects.filter(pk=require_uuid(run_id, "run"), automation=automation).first()
        if run is None:
            raise not_found("Run not found")
        return run

    @extend_schema(summary="Get a run (API-28)", responses={200: dict})
    def get(self, request, automation_id: str, run_id: str):
        return self.ok(run_data(self.run(automation_id, run_id)))


class StepRunListView(RunDetailView):
    @extend_schema(
        operation_id="automation_step_runs_list",
        summary="List a run's step runs, by scheduledAt (API-28)",
        responses={200: dict},
    )
    def get(self, request, automation_id: str, run_id: str):
        run = self.run(automation_id, run_id)
        return self.paginated(
            AutomationStepRun.objects.filter(run=run),
            step_run_data,
            order=("scheduled_at", "step_index", "id"),
            list_key=f"runs/{run.pk}/step-runs",
        )


class StatsView(AutomationsView):
    required_scope = "automations:read"

    @extend_schema(summary="Counters and the step funnel (API-28, AUT-35)", responses={200: dict})
    def get(self, request, automation_id: str):
        automation = self.automation(automation_id)
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


class EventsView(ApiView):
    required_scope = "events:write"

    @extend_schema(summary="Record an event for a contact (API-21)", request=dict, responses={201: dict})
    def post(self, request):
        from owlat.contacts import is_valid_email, normalize_email

        body = self.body()
        if "email" not in body:
            raise invalid_input("email is required", field="email")
        email = body["email"]
        if not isinstance(email, str):
            raise invalid_input("email must be a string", field="email")
        if not is_valid_email(email):
            raise invalid_input("Invalid email format", field="email")
        if "eventName" not in body:
            raise invalid_input("eventName is required", field="eventName")
        name = body["eventName"]
        if not isinstance(name, str):
            raise invalid_input("eventName must be a string", field="eventName")
        if not is_valid_event_name(name):
            raise invalid_input(EVENT_NAME_MESSAGE, field="eventName")
        properties = body.get("eventProperties")
        if properties is not None:
            if not isinstance(properties, dict):
                raise invalid_input("eventProperties must be an object", field="eventProperties")
            for key, value in properties.items():
                if value is not None and not isinstance(value, str | int | float | bool):
                    raise invalid_input(
                        "eventProperties values must be strings, numbers, booleans or null",
                        field=f"eventProperties.{key}",
                    )
        create = body.get("createContactIfNotExists", False)
        if not isinstance(create, bool):
            raise invalid_input(
                "createContactIfNotExists must be a boolean", field="createContactIfNotExists"
            )
        try:
            result = services.event_record(
                organization_id=self.organization_id,
                email=email,
                event_name=name,
                event_properties=properties,
                create_contact=create,
                actor=self.actor,
            )
        except services.ContactNotFound:
            raise not_found(
                f'Contact with email "{normalize_email(email)}" not found. Set createContactIfNotExists: true '
                "to create the contact automatically."
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
