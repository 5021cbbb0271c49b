"""The queue tables' storage parameters (owlat/storage.py, issue 12): set by the migrations on PostgreSQL, reset
backwards, nothing on other databases."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.state import ProjectState

from owlat.storage import QUEUE_TABLE_VACUUM, SetStorageParameters

pytestmark = pytest.mark.django_db


def reloptions(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [table])
        found = cursor.fetchone()[0] or []
    return dict(option.split("=", 1) for option in found)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="storage parameters are PostgreSQL's")
@pytest.mark.parametrize(
    ("table", "fillfactor"),
    [
        ("delivery_transactionalsend", "80"),
        ("delivery_emailsend", "80"),
        ("automations_automationrun", "80"),
        ("automations_automationsteprun", None),
        ("owlat_duetask", None),
    ],
)
def test_migrations_set_queue_table_parameters(table, fillfactor):
    found = reloptions(table)
    assert found.get("fillfactor") == fillfactor
    for name, value in QUEUE_TABLE_VACUUM.items():
        assert float(found[name]) == float(value), name


@pytest.mark.skipif(connection.vendor != "postgresql", reason="storage parameters are PostgreSQL's")
def test_operation_resets_backwards_and_sets_forwards(django_db_blocker):
    from django.db.migrations.loader import MigrationLoader

    state = MigrationLoader(connection).project_state()
    operation = SetStorageParameters("duetask", {"autovacuum_vacuum_threshold": 1000})
    with connection.schema_editor() as editor:
        operation.database_backwards("owlat", editor, state, state)
    assert "autovacuum_vacuum_threshold" not in reloptions("owlat_duetask")
    with connection.schema_editor() as editor:
        operation.database_forwards("owlat", editor, state, state)
    assert reloptions("owlat_duetask")["autovacuum_vacuum_threshold"] == "1000"


def test_operation_leaves_the_state_alone():
    state = ProjectState()
    SetStorageParameters("duetask", {"fillfactor": 80}).state_forwards("owlat", state)
    assert state.models == {}
    name, args, kwargs = SetStorageParameters("duetask", {"fillfactor": 80}).deconstruct()
    assert (name, args, kwargs) == ("SetStorageParameters", ["duetask", {"fillfactor": 80}], {})


def test_autovacuum_check_warns_only_when_off():
    from owlat.checks import autovacuum_warnings

    assert autovacuum_warnings("on", "default") == []
    (warning,) = autovacuum_warnings("off", "default")
    assert warning.id == "owlat.W001"
    assert "ALTER SYSTEM SET autovacuum = on" in warning.hint


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads the PostgreSQL server's setting")
def test_autovacuum_check_reads_the_server():
    from django.core import checks

    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        setting = cursor.fetchone()[0]
    found = [m for m in checks.run_checks(databases=["default"]) if m.id == "owlat.W001"]
    assert len(found) == (0 if setting == "on" else 1)
