"""The events API's baseline view (issue 12: a minimal DRF view inserting one row, bench/baseline) is bench-only:
the project's settings neither install its app nor mount its URL."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import Resolver404, resolve


def test_the_baseline_view_is_not_reachable_with_the_project_settings():
    assert "bench.baseline" not in settings.INSTALLED_APPS
    assert settings.ROOT_URLCONF == "owlat.urls"
    with pytest.raises(Resolver404):
        resolve("/api/v1/bench/baseline-row")  # bench.baseline.urls.BASELINE_PATH
