"""owlat.sql.instance_from_values (issue 12; the walker's claim builds its rows with it): instances built without `Model.__init__` are the ones `from_db` and
the positional constructor build, and the helper falls back to them when `__init__` would do more than store the
values (a pre_init/post_init receiver, a field with its own descriptor)."""

from __future__ import annotations

import pytest
from django.db import models
from django.db.models.signals import post_init
from django.utils import timezone

from automations.tests.conftest import DELAY_1H
from owlat.sql import _plain_attnames, instance_from_values

pytestmark = pytest.mark.django_db


def _values(obj: models.Model) -> list:
    return [getattr(obj, f.attname) for f in obj._meta.concrete_fields]


def _state(obj: models.Model) -> tuple:
    return obj._state.adding, obj._state.db


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
    )
    step = AutomationStep.objects.get(automation=automation, step_index=0)
    (row,) = step_runs_create_many([(run, step, run.started_at, None)])
    return AutomationStepRun.objects.get(pk=row.pk)


def test_a_row_read_back_is_the_instance_from_db_builds(step_run, contact):
    from automations.models import AutomationStepRun
    from owlat.models import Contact

    for orm in (step_run, Contact.objects.get(pk=contact.pk)):
        model = type(orm)
        built = instance_from_values(model, _values(orm), db="default")
        assert type(built) is model and _values(built) == _values(orm) and _state(built) == (False, "default")
        assert built == orm and set(built.__dict__) == set(orm.__dict__)
    built = instance_from_values(AutomationStepRun, _values(step_run), db="default")
    # the protected state field behaves as on a fetched row: no direct assignment, transitions work
    with pytest.raises(AttributeError):
        built.status = "executing"
    assert built.run.pk == step_run.run_id  # the foreign key's related object loads as usual


def test_a_new_row_is_the_instance_the_positional_constructor_builds(step_run):
    from automations.models import AutomationStepRun

    values = _values(step_run)
    new, built = AutomationStepRun(*values), instance_from_values(AutomationStepRun, values, db=None)
    assert _values(built) == _values(new) and _state(built) == _state(new) == (True, None)


def test_a_receiver_or_a_descriptor_of_its_own_means_the_constructor(step_run):
    from automations.models import AutomationStepRun

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=AutomationStepRun)
    try:
        built = instance_from_values(AutomationStepRun, _values(step_run), db="default")
    finally:
        post_init.disconnect(receiver, sender=AutomationStepRun)
    assert seen == [built] and _state(built) == (False, "default")

    class WithFile(models.Model):
        document = models.FileField()

        class Meta:
            app_label = "owlat"
            managed = False

    assert _plain_attnames(WithFile) is None
    assert _plain_attnames(AutomationStepRun) is not None


def test_new_instance_is_the_keyword_constructors_row(step_run):
    from automations.models import AutomationStepRun
    from owlat.sql import new_instance

    given = {"organization_id": step_run.organization_id, "run_id": step_run.run_id, "step_index": 3}
    new, built = AutomationStepRun(**given), new_instance(AutomationStepRun, **given)
    assert type(built.id) is type(new.id) and built.id != new.id  # a fresh default per row
    assert _values(built)[1:] == _values(new)[1:] and _state(built) == _state(new) == (True, None)
    assert built.status == "pending" and built.retry_count == 0
    with pytest.raises(TypeError):
        new_instance(AutomationStepRun, run=step_run.run)  # attnames only
