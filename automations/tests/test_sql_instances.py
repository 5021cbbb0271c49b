"""Rows the walker's claim statement reads come back as the ORM builds them: `owlat.sql.model_from_row` applies
each field's database converters and builds the instance with `Model.from_db`, on PostgreSQL and SQLite."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from automations.tests.conftest import DELAY_1H

pytestmark = pytest.mark.django_db


def _values(obj) -> list:
    return [getattr(obj, f.attname) for f in obj._meta.concrete_fields]


@pytest.fixture
def step_run(make_automation, contact):
    from automations.lifecycle.batch import step_runs_create_many
    from automations.models import AutomationRun, AutomationStep, AutomationStepRun

    automation = make_automation([DELAY_1H], status="active")
    run = AutomationRun.objects.create(
        organization_id=automation.organization_id,
        automation=automation,
        contact=contact,
        status="running",
        started_at=timezone.now(),
        trigger_data={"plan": "pro", "n": [1, 2]},
    )
    step = AutomationStep.objects.get(automation=automation, step_index=0)
    (row,) = step_runs_create_many([(run, step, run.started_at, None)])
    return AutomationStepRun.objects.get(pk=row.pk)


def test_a_raw_row_is_the_instance_the_orm_reads(step_run):
    from automations.models import AutomationRun
    from owlat.sql import model_from_row

    orm = AutomationRun.objects.get(pk=step_run.run_id)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in AutomationRun._meta.concrete_fields)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {AutomationRun._meta.db_table} WHERE id = %s", [orm.pk.hex])
        (row,) = cursor.fetchall()
    built = model_from_row(AutomationRun, row)
    assert _values(built) == _values(orm)
    assert built.trigger_data == {"plan": "pro", "n": [1, 2]}  # the JSON field's converter ran
    assert (built._state.adding, built._state.db) == (False, "default")


def test_a_claimed_step_run_and_its_run_come_back_as_the_orm_reads_them(step_run):
    from automations.lifecycle.batch import step_runs_claim_due
    from automations.models import AutomationRun, AutomationStepRun

    (claimed,) = step_runs_claim_due(at=timezone.now(), limit=10, ids=[step_run.pk])
    fresh = AutomationStepRun.objects.get(pk=step_run.pk)
    assert _values(claimed.step_run) == _values(fresh) and fresh.status == "executing"
    assert claimed.step_run._state.adding is False
    with pytest.raises(AttributeError):
        claimed.step_run.status = "completed"  # the protected state field, as on a fetched row
    run = AutomationRun.objects.select_related("contact", "automation").get(pk=step_run.run_id)
    assert _values(claimed.run) == _values(run)
    assert claimed.run.trigger_data == {"plan": "pro", "n": [1, 2]}
    assert _values(claimed.run.contact) == _values(run.contact)
    assert claimed.run.automation.trigger_config == run.automation.trigger_config
