"""`/api/v1` routes of the automations app (API-21, API-27, API-28); every route is slash-optional."""

from automations import api_views as v
from owlat.api.legacy import api_route

_ID = r"automations/(?P<automation_id>[^/]+)"

urlpatterns = [
    api_route(r"events", v.EventsView, name="api-events"),
    api_route(r"automations", v.AutomationListView, name="api-automations"),
    api_route(rf"{_ID}/duplicate", v.AutomationDuplicateView, name="api-automation-duplicate"),
    *[
        api_route(rf"{_ID}/{verb}", v.transition_view(verb), name=f"api-automation-{verb}")
        for verb in ("activate", "pause", "resume", "revert-to-draft")
    ],
    api_route(rf"{_ID}/steps", v.StepListView, name="api-automation-steps"),
    api_route(rf"{_ID}/steps/reorder", v.StepReorderView, name="api-automation-steps-reorder"),
    api_route(rf"{_ID}/steps/(?P<step_id>[^/]+)", v.StepDetailView, name="api-automation-step"),
    api_route(rf"{_ID}/runs", v.RunListView, name="api-automation-runs"),
    api_route(rf"{_ID}/runs/(?P<run_id>[^/]+)/step-runs", v.StepRunListView, name="api-automation-step-runs"),
    api_route(rf"{_ID}/runs/(?P<run_id>[^/]+)", v.RunDetailView, name="api-automation-run"),
    api_route(rf"{_ID}/stats", v.StatsView, name="api-automation-stats"),
    api_route(_ID, v.AutomationDetailView, name="api-automation"),
]
