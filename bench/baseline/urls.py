"""The project's URLs plus the baseline view (bench-only URLconf, `bench.baseline.settings`)."""

from django.urls import include, path

from bench.baseline.views import BaselineRowView

# Under /api/v1, so the baseline passes through exactly the middleware the events API does (the API-only wire
# rules, and the session, auth and messages middleware that step aside for API paths): outside it, the baseline
# would pay middleware the events API no longer pays, and the ratio would flatter the events API.
BASELINE_PATH = "api/v1/bench/baseline-row"

urlpatterns = [
    path(BASELINE_PATH, BaselineRowView.as_view()),
    path("", include("owlat.urls")),
]
