"""Project-wide pytest set-up: tests run on PostgreSQL (DATABASE_URL, set by scripts/test.sh).

`owlat.testing` provides the fixtures `smtp_sink`, `workers` and `http_receiver` (and the `worker_env` marker).
Long fault-injection variants are marked `slow` and run only with OWLAT_SLOW_TESTS=1 (set by `.ci/run`, D-18).
"""

import os

import pytest

pytest_plugins = ["owlat.testing"]


def pytest_collection_modifyitems(config, items):
    if os.environ.get("OWLAT_SLOW_TESTS") == "1":
        return
    skip_slow = pytest.mark.skip(reason="long variant: set OWLAT_SLOW_TESTS=1 (make test via .ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True)
def _no_analytics_by_default(settings):
    settings.POSTHOG_API_KEY = ""
    from owlat.analytics import reset_client

    reset_client()
    yield
    reset_client()
