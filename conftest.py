"""Project-wide pytest set-up: tests run on PostgreSQL (DATABASE_URL, set by scripts/test.sh)."""

import pytest


@pytest.fixture(autouse=True)
def _no_analytics_by_default(settings):
    settings.POSTHOG_API_KEY = ""
    from owlat.analytics import reset_client

    reset_client()
    yield
    reset_client()
