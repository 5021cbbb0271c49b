"""DOM-19 / D-05: periodic jobs declared in code, upserted as django-q2 cron schedules by `sync_schedules`."""

import datetime as dt
import io
import sys
import types

import pytest
from croniter import croniter
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.utils import timezone
from django_q.models import Schedule

from owlat.audit import audit_purge_task, audit_write
from owlat.kernel_schedules import SCHEDULES as KERNEL_SCHEDULES
from owlat.models import AuditLog, Contact, Organization, Segment
from owlat.schedules import SCHEDULE_MODULES, ScheduleSpec, collect_schedules, sync_schedules
from owlat.segments import segment_count_refresh, segment_counts_refresh_task

pytestmark = pytest.mark.django_db


def _rows():
    return {
        s.name: (s.func, s.schedule_type, s.cron, s.cluster, s.repeats)
        for s in Schedule.objects.filter(name__startswith="owlat:")
    }


def test_kernel_declares_audit_retention_daily_and_segment_counts_every_30_minutes():
    by_func = {s.func_path: s for s in KERNEL_SCHEDULES}
    audit = by_func["owlat.audit.audit_purge_task"]
    segments = by_func["owlat.segments.segment_counts_refresh_task"]
    start = dt.datetime(2025, 1, 1, 0, 0, tzinfo=dt.UTC)
    it = croniter(audit.cron, start)
    assert it.get_next(dt.datetime) - it.get_prev(dt.datetime) == dt.timedelta(days=1)
    it = croniter(segments.cron, start)
    first, second, third = (it.get_next(dt.datetime) for _ in range(3))
    assert second - first == third - second == dt.timedelta(minutes=30)


def test_collect_reads_every_existing_app_module_in_layer_order():
    specs = collect_schedules()
    names = [s.name for s in specs]
    assert names[: len(KERNEL_SCHEDULES)] == [s.name for s in KERNEL_SCHEDULES]
    assert len(set(names)) == len(names)
    assert SCHEDULE_MODULES[0] == "owlat.kernel_schedules"
    assert {
        "templates.schedules",
        "delivery.schedules",
        "automations.schedules",
        "campaigns.schedules",
    } <= set(SCHEDULE_MODULES)


@pytest.fixture
def fake_modules(monkeypatch):
    """Install throwaway `SCHEDULES` modules under made-up names."""

    def install(**modules):
        for name, specs in modules.items():
            module = types.ModuleType(name)
            module.SCHEDULES = specs
            monkeypatch.setitem(sys.modules, name, module)
        return list(modules)

    return install


def test_collect_skips_missing_modules_and_validates(fake_modules):
    names = fake_modules(fake_a=[ScheduleSpec("a job", "owlat.audit.audit_purge_task", "*/5 * * * *")])
    assert [s.name for s in collect_schedules([*names, "no_such_app.schedules", "owlat.no_such_module"])] == [
        "a job"
    ]

    for bad in [
        ScheduleSpec("bad cron", "owlat.audit.audit_purge_task", "every minute"),
        ScheduleSpec("bad func", "owlat.audit.no_such_task", "* * * * *"),
        ScheduleSpec("bad queue", "owlat.audit.audit_purge_task", "* * * * *", queue="turbo"),
        ScheduleSpec("", "owlat.audit.audit_purge_task", "* * * * *"),
    ]:
        with pytest.raises(ImproperlyConfigured):
            collect_schedules(fake_modules(fake_bad=[bad]))

    dup = fake_modules(
        fake_x=[ScheduleSpec("same", "owlat.audit.audit_purge_task", "* * * * *")],
        fake_y=[ScheduleSpec("same", "owlat.audit.audit_purge_task", "0 * * * *")],
    )
    with pytest.raises(ImproperlyConfigured, match="declared in both"):
        collect_schedules(dup)


def test_sync_creates_updates_removes_and_is_idempotent():
    specs = [
        ScheduleSpec("purge", "owlat.audit.audit_purge_task", "17 3 * * *"),
        ScheduleSpec("segments", segment_counts_refresh_task, "*/30 * * * *"),
        ScheduleSpec("pool job", "owlat.audit.audit_purge_task", "* * * * *", queue="campaign"),
    ]
    hand_made = Schedule.objects.create(name="manual", func="owlat.audit.audit_purge_task", schedule_type="D")
    stale = Schedule.objects.create(
        name="owlat:old job", func="owlat.audit.audit_purge_task", schedule_type="C", cron="* * * * *"
    )

    # first run creates
    summary = sync_schedules(specs=specs)
    assert sorted(summary.created) == ["owlat:pool job", "owlat:purge", "owlat:segments"]
    assert summary.removed == ["owlat:old job"]
    assert _rows() == {
        "owlat:purge": ("owlat.audit.audit_purge_task", "C", "17 3 * * *", None, -1),
        "owlat:segments": ("owlat.segments.segment_counts_refresh_task", "C", "*/30 * * * *", None, -1),
        "owlat:pool job": ("owlat.audit.audit_purge_task", "C", "* * * * *", "campaign", -1),
    }
    assert not Schedule.objects.filter(pk=stale.pk).exists()
    assert Schedule.objects.filter(pk=hand_made.pk).exists()  # not ours: left alone
    purge = Schedule.objects.get(name="owlat:purge")
    assert purge.next_run > timezone.now()
    assert (purge.next_run.hour, purge.next_run.minute) == (3, 17)

    # second run changes nothing
    ids = set(Schedule.objects.values_list("pk", flat=True))
    again = sync_schedules(specs=specs)
    assert not again.changed
    assert sorted(again.unchanged) == sorted(_rows())
    assert set(Schedule.objects.values_list("pk", flat=True)) == ids

    # a changed cron updates the row in place; a dropped spec is removed
    specs2 = [ScheduleSpec("purge", "owlat.audit.audit_purge_task", "0 4 * * *"), specs[1]]
    third = sync_schedules(specs=specs2)
    assert third.updated == ["owlat:purge"]
    assert third.removed == ["owlat:pool job"]
    assert Schedule.objects.get(name="owlat:purge").pk == purge.pk
    assert Schedule.objects.get(name="owlat:purge").next_run.hour == 4

    # duplicated rows of one name collapse to one
    Schedule.objects.create(
        name="owlat:segments", func="owlat.audit.audit_purge_task", schedule_type="C", cron="* * * * *"
    )
    fourth = sync_schedules(specs=specs2)
    assert fourth.removed == ["owlat:segments"]
    assert Schedule.objects.filter(name="owlat:segments").count() == 1
    assert not sync_schedules(specs=specs2).changed


def test_dry_run_changes_nothing():
    specs = [ScheduleSpec("purge", "owlat.audit.audit_purge_task", "17 3 * * *")]
    summary = sync_schedules(specs=specs, dry_run=True)
    assert summary.created == ["owlat:purge"]
    assert "would create owlat:purge" in summary.lines()
    assert Schedule.objects.count() == 0


def test_command_syncs_the_declared_schedules():
    out = io.StringIO()
    call_command("sync_schedules", stdout=out)
    declared = {"owlat:" + s.name for s in collect_schedules()}
    assert set(_rows()) == declared
    assert "created" in out.getvalue()
    out = io.StringIO()
    call_command("sync_schedules", stdout=out)
    assert f"0 created, 0 updated, {len(declared)} unchanged, 0 removed" in out.getvalue()
    out = io.StringIO()
    call_command("sync_schedules", "--dry-run", stdout=out)
    assert out.getvalue().startswith("dry run:")


# --- the kernel's scheduled tasks --------------------------------------------------------------------------


def test_segment_counts_refresh_counts_live_matching_contacts():
    org = Organization.objects.create(name="O")
    Contact.objects.create(organization=org, email="a@example.com", has_opened=True)
    Contact.objects.create(organization=org, email="b@example.com")
    Contact.objects.create(
        organization=org, email="c@example.com", has_opened=True, deleted_at=timezone.now()
    )
    opened = Segment.objects.create(
        organization=org,
        name="openers",
        filters={
            "logic": "AND",
            "conditions": [{"kind": "email_activity", "field": "opened", "operator": "is_true"}],
        },
    )
    everyone = Segment.objects.create(organization=org, name="all", filters={"logic": "OR", "conditions": []})
    corrupt = Segment.objects.create(
        organization=org, name="broken", filters={"logic": "AND"}, cached_count=9
    )
    before = Segment.objects.get(pk=opened.pk).updated_at

    assert segment_counts_refresh_task() == "refreshed 3 segment counts"

    counts = dict(Segment.objects.values_list("name", "cached_count"))
    assert counts == {"openers": 1, "all": 2, "broken": 0}
    assert all(Segment.objects.values_list("cached_count_at", flat=True))
    assert Segment.objects.get(pk=opened.pk).updated_at == before  # a recount is not an edit
    assert segment_count_refresh(segment_id=everyone.pk) == 2
    assert segment_count_refresh(segment_id=corrupt.pk) == 0


def test_audit_retention_purges_rows_older_than_30_days():
    org = Organization.objects.create(name="O")
    old = audit_write(organization_id=org.pk, actor="u1", action="contact.created", resource="contact")
    fresh = audit_write(organization_id=org.pk, actor="u1", action="contact.created", resource="contact")
    AuditLog.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=31))
    assert audit_purge_task() == "purged 1 audit rows"
    assert list(AuditLog.objects.values_list("pk", flat=True)) == [fresh.pk]
