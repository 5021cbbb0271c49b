"""`/api/v1` routes of the automations app (API-21, API-27, API-28)."""

from django.urls import path

from automations.api import views as v
from automations.api.simulate import SimulateView

ID = "automations/<id:automation_id>"

urlpatterns = [
    path("events", v.EventsView.as_view(), name="api-events"),
    path("automations", v.AutomationListView.as_view(), name="api-automations"),
    path(f"{ID}/duplicate", v.AutomationDuplicateView.as_view(), name="api-automation-duplicate"),
    *[
        path(f"{ID}/{verb}", v.transition_view(verb).as_view(), name=f"api-automation-{verb}")
        for verb in v.TRANSITIONS
    ],
    path(f"{ID}/steps", v.StepListView.as_view(), name="api-automation-steps"),
    path(f"{ID}/steps/reorder", v.StepReorderView.as_view(), name="api-automation-steps-reorder"),
    path(f"{ID}/steps/<id:step_id>", v.StepDetailView.as_view(), name="api-automation-step"),
    path(f"{ID}/runs", v.RunListView.as_view(), name="api-automation-runs"),
    path(f"{ID}/runs/<id:run_id>/step-runs", v.StepRunListView.as_view(), name="api-automation-step-runs"),
    path(f"{ID}/runs/<id:run_id>", v.RunDetailView.as_view(), name="api-automation-run"),
    path(f"{ID}/stats", v.StatsView.as_view(), name="api-automation-stats"),
    path(f"{ID}/simulate", SimulateView.as_view(), name="api-automation-simulate"),
    path(ID, v.AutomationDetailView.as_view(), name="api-automation"),
]
