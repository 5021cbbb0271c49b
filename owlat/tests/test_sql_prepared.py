"""owlat.sql.prepared_cursor (issue 12): the events API's hot written-out statements run as server-side prepared
statements on PostgreSQL, with the same results, Django's query log and error translation, and again after a
rollback; the plain cursor with `OWLAT_PREPARED_STATEMENTS = False`."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from owlat.sql import prepared_cursor

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"),
]

SQL = (
    "SELECT %(id)s::uuid, %(at)s::timestamptz, %(doc)s::jsonb, %(n)s::integer, "
    "%(name)s || '-x', %(rate)s * 2 WHERE %(name)s = 'owl'"
)


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE from_sql = false")
        return [row[0] for row in cursor.fetchall()]


def _params() -> dict:
    return {
        "id": str(uuid.uuid4()),
        "at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "doc": '{"a": [1, "b"]}',
        "n": 7,
        "name": "owl",
        "rate": 1.5,
    }


def test_a_statement_runs_prepared_once_per_connection_with_the_plain_cursors_results():
    params = _params()
    with connection.cursor() as cursor:
        cursor.execute(SQL, params)
        plain = cursor.fetchall()
    assert not any("pg_prepared" not in s and "|| '-x'" in s for s in _prepared())
    for _ in range(3):
        with prepared_cursor() as cursor:
            cursor.execute(SQL, params)
            assert cursor.fetchall() == plain
    ours = [s for s in _prepared() if "|| '-x'" in s]
    assert len(ours) == 1 and "$1" in ours[0]  # prepared once, parameters bound server-side
    assert plain[0][0] == uuid.UUID(params["id"]) and plain[0][2] == '{"a": [1, "b"]}'


def test_the_query_log_shows_the_statement_with_its_parameters():
    params = _params()
    with CaptureQueriesContext(connection) as ctx, prepared_cursor() as cursor:
        cursor.execute(SQL, params)
    assert len(ctx.captured_queries) == 1
    logged = ctx.captured_queries[0]["sql"]
    assert params["id"] in logged and "'owl'" in logged and "$1" not in logged


def test_errors_are_djangos_and_a_rollback_does_not_break_the_next_execution():
    with prepared_cursor() as cursor:
        cursor.execute("SELECT %s::integer", [1])
    with pytest.raises(IntegrityError), transaction.atomic(), prepared_cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE t_prep (id int PRIMARY KEY)")
        cursor.execute("INSERT INTO t_prep VALUES (%s), (%s)", [1, 1])
    with prepared_cursor() as cursor:  # after the savepoint's rollback
        cursor.execute("SELECT %s::integer", [2])
        assert cursor.fetchone() == (2,)


def test_switched_off_it_is_the_plain_cursor(settings):
    settings.OWLAT_PREPARED_STATEMENTS = False
    with prepared_cursor() as cursor:
        cursor.execute("SELECT %s::integer + 40", [2])
        assert cursor.fetchone() == (42,)
    assert not any("+ 40" in s for s in _prepared())


@pytest.mark.parametrize("prepared", [True, False])
def test_prepared_models_builds_the_instances_the_orm_builds(settings, prepared):
    from owlat.models import OrganizationSettings
    from owlat.organizations import organization_create, organization_settings
    from owlat.sql import prepared_models

    settings.OWLAT_PREPARED_STATEMENTS = prepared
    org = organization_create(name="Owls", default_from_email="hoot@example.com")
    orm = OrganizationSettings.objects.get(organization_id=org.pk)
    (row,) = prepared_models(OrganizationSettings, "organization_id = %s", [org.pk])
    fields = [f.attname for f in OrganizationSettings._meta.concrete_fields]
    assert [getattr(row, f) for f in fields] == [getattr(orm, f) for f in fields]
    assert isinstance(row.feature_flags, dict) and not row._state.adding and row._state.db == "default"
    assert [getattr(organization_settings(str(org.pk)), f) for f in fields] == [
        getattr(orm, f) for f in fields
    ]
    assert prepared_models(OrganizationSettings, "organization_id = %s", [uuid.uuid4()]) == []
