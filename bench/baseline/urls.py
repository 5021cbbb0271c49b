"""The project's URLs plus the baseline view (bench-only URLconf, `bench.baseline.settings`)."""

from django.urls import include, path

from bench.baseline.views import BaselineRowView

BASELINE_PATH = "bench/baseline-row"

urlpatterns = [
    path(BASELINE_PATH, BaselineRowView.as_view()),
    path("", include("owlat.urls")),
]
