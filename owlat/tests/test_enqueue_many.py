"""`owlat.jobs.enqueue_many`: many tasks in one write, each exactly what `enqueue` would have written."""

import datetime as dt

import pytest
from django.db import transaction
from django.utils import timezone
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from owlat.jobs import enqueue, enqueue_many
from owlat.models import DueTask
from owlat.tests.test_jobs import MARKER, _markers_queued
from testsupport import drain_queue


def _package(row):
    pkg = SignedPackage.loads(row.payload)
    return {k: v for k, v in pkg.items() if k not in ("id", "name", "started")}


@pytest.mark.django_db
def test_broker_rows_are_those_enqueue_writes():
    enqueue(MARKER, "org", "one", queue="campaign")
    enqueue_many(MARKER, [("org", "two"), ("org", "three")], queue="campaign")
    rows = list(OrmQ.objects.order_by("id"))
    assert [r.key for r in rows] == ["campaign"] * 3
    single, *many = [_package(r) for r in rows]
    assert [m["args"] for m in many] == [("org", "two"), ("org", "three")]
    assert all({**m, "args": single["args"]} == single for m in many)
    ids = {SignedPackage.loads(r.payload)["id"] for r in rows}
    assert len(ids) == 3
    assert [t.args for t in _markers_queued()] == [("org", "one"), ("org", "two"), ("org", "three")]


@pytest.mark.django_db
def test_default_queue_and_running_them():
    from owlat.models import AuditLog, Organization

    org = Organization.objects.create(name="Jobs")
    enqueue_many(MARKER, [(str(org.pk), "a"), (str(org.pk), "b")])
    assert [(t.queue, t.args[1]) for t in _markers_queued()] == [("default", "a"), ("default", "b")]
    drain_queue()
    assert sorted(AuditLog.objects.filter(action="test.marker").values_list("resource_id", flat=True)) == [
        "a",
        "b",
    ]


@pytest.mark.django_db
def test_future_tasks_are_due_rows_and_nothing_is_written_on_rollback():
    later = timezone.now() + dt.timedelta(minutes=5)
    enqueue_many(MARKER, [("org", "x"), ("org", "y")], at=later, queue="campaign")
    assert list(DueTask.objects.order_by("args").values_list("func", "args", "queue", "due_at")) == [
        (MARKER, ["org", "x"], "campaign", later),
        (MARKER, ["org", "y"], "campaign", later),
    ]
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_many(MARKER, [("org", "z")], queue="campaign")
        raise RuntimeError("rolled back")
    assert OrmQ.objects.count() == 0


@pytest.mark.django_db
def test_unknown_queue_and_the_deliver_twice_switch(settings):
    with pytest.raises(ValueError):
        enqueue_many(MARKER, [("org", "a")], queue="bulk")
    settings.OWLAT_TEST_DELIVER_TWICE = True
    enqueue_many(MARKER, [("org", "a")], queue="campaign")
    assert [t.args for t in _markers_queued()] == [("org", "a"), ("org", "a")]
