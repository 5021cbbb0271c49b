"""`GET /automations/{id}/simulate?contactId=…`: the walk `automations.simulate` computes for one contact of the
key's organization — the steps, the condition values, the branches, the waits, the mail — sending and writing
nothing."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from automations.api.views import AUTOMATION_ID, AutomationsView
from automations.simulate import automation_simulate
from owlat.api.base import validated
from owlat.api.errors import invalid_input
from owlat.api.fields import TimestampField
from owlat.api.schema import envelope, errors

OUTCOMES = ("would_send", "skipped", "fails", "waits", "yes", "no", "ends")
ENDS = ("completed", "ended", "failed", "loop_cap")


class SimulateQuerySerializer(serializers.Serializer):
    contactId = serializers.UUIDField(help_text="A contact of the organization.")


class SimulatedStepSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The step's index.")
    stepType = serializers.CharField(source="step_type")
    at = TimestampField(help_text="When the step would run (after the waits before it).")
    outcome = serializers.ChoiceField(
        choices=OUTCOMES,
        help_text="`would_send` / `skipped` / `fails` (email), `waits` (delay), `yes` / `no` (condition), "
        "`ends` (end step).",
    )
    summary = serializers.CharField(help_text="What happens, in words.")
    nextIndex = serializers.IntegerField(
        source="next_index", allow_null=True, help_text="The step a condition leads to."
    )
    detail = serializers.DictField(
        help_text="Email: `subject`, `to`, `from` or `reason`; condition: `test`, `actual`, `result`; delay: "
        "`waitSeconds`."
    )


class SimulationSerializer(serializers.Serializer):
    automationId = serializers.CharField(source="automation_id")
    contactId = serializers.CharField(source="contact_id")
    email = serializers.CharField()
    steps = SimulatedStepSerializer(many=True)
    end = serializers.ChoiceField(
        choices=ENDS,
        help_text="`completed` (no step left), `ended` (an end step), `failed` (a step would fail), `loop_cap`.",
    )
    warning = serializers.CharField(
        help_text="What a real run would meet first (a draft automation, …), or empty."
    )


@extend_schema(tags=["Automations"], parameters=[AUTOMATION_ID])
class SimulateView(AutomationsView):
    required_scopes = {"GET": "automations:read"}

    @extend_schema(
        operation_id="automations_simulate",
        summary="Simulate an automation for a contact",
        description="The steps a run would take for the contact now: each condition evaluated with the "
        "contact's values and the branch taken, each wait and when it ends, each email's subject or why it "
        "would be skipped. Nothing is sent or written. Scope `automations:read`.",
        parameters=[SimulateQuerySerializer],
        responses={200: envelope(SimulationSerializer, "Simulation"), **errors(400, 404)},
    )
    def get(self, request: Request, automation_id: str) -> Response:
        from owlat.contacts import live_contacts

        automation = self.get_automation(automation_id)
        params = validated(SimulateQuerySerializer, request.query_params)
        contact = live_contacts(self.organization_id).filter(pk=params["contactId"]).first()
        if contact is None:
            raise invalid_input("Contact not found", field="contactId")
        simulation = automation_simulate(automation=automation, contact=contact)
        return self.ok(SimulationSerializer(simulation).data)
