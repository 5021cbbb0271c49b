"""Project-wide pytest set-up: tests run on PostgreSQL (DATABASE_URL, set by scripts/test.sh).

`testsupport` provides the fixtures `smtp_sink`, `workers` and `http_receiver` (and the `worker_env` marker).
Long fault-injection variants are marked `slow` and run only with OWLAT_SLOW_TESTS=1 (set by `.ci/run`, D-18).
Tests marked `sqlite_smoke` run only on SQLite (`make test` runs them in their own step, D-16); there the test
database is a file, so real worker processes can share it.
"""

import os

import pytest

pytest_plugins = ["testsupport.plugin"]


def _database_is_sqlite() -> bool:
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"


def pytest_collection_modifyitems(config, items):
    if not _database_is_sqlite():
        kept = [item for item in items if "sqlite_smoke" not in item.keywords]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if "sqlite_smoke" in item.keywords])
            items[:] = kept
    if os.environ.get("OWLAT_SLOW_TESTS") == "1":
        return
    skip_slow = pytest.mark.skip(reason="long variant: set OWLAT_SLOW_TESTS=1 (make test via .ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """On SQLite, put the test database in a file (not in memory) so worker processes can open it too."""
    if _database_is_sqlite():
        from django.conf import settings

        db = settings.DATABASES["default"]
        db.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("sqlite-test-db") / "test.sqlite3")


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing():
    """Django's default PBKDF2 costs ~0.5 s per user created or logged in; tests don't need the strength."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _no_analytics_by_default(settings):
    settings.POSTHOG_API_KEY = ""
    from owlat.analytics import reset_client

    reset_client()
    yield
    reset_client()


@pytest.fixture(autouse=True)
def _no_remembered_lookup_throttle():
    """The failed-lookup throttle remembers blocked clients per process (owlat.lookup_throttle); the shared bucket
    rolls back with each test, so the memory must not outlive it either."""
    yield
    from owlat.lookup_throttle import forget

    forget()
