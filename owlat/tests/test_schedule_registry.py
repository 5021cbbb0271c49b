"""No arbitrary code from the admin: a django-q2 schedule runs only a job of the project's registry (the apps'
declared schedules), whatever saves it — the admin, the ORM, `sync_schedules` — and finished tasks are read-only
records whose error is readable text."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from django_q.models import Failure, OrmQ, Schedule

from owlat.schedules import registered_jobs, schedule_refusals, sync_schedules

pytestmark = pytest.mark.django_db

JOB = "owlat.audit.audit_purge_task"


def test_the_registry_holds_every_declared_job_and_nothing_else():
    jobs = registered_jobs()
    assert jobs[JOB] == "audit retention"
    assert "os.system" not in jobs and "owlat.permissions.has_permission" not in jobs


@pytest.mark.parametrize(
    ("values", "field", "says"),
    [
        ({"func": "os.system", "args": "'id'"}, "func", "not a registered job"),
        ({"func": JOB, "hook": "os.system"}, "hook", "takes no hook"),
        ({"func": JOB, "kwargs": "q_options={'hook': 'os.system'}"}, "kwargs", "q_options is not allowed"),
        ({"func": JOB, "kwargs": "x=__import__('os').system('id')"}, "kwargs", "plain values"),
        ({"func": JOB, "args": "open('/etc/passwd')"}, "args", "plain values"),
        ({"func": JOB, "cluster": "nowhere"}, "cluster", "Unknown queue"),
    ],
)
def test_an_orm_save_of_anything_but_a_registered_job_is_refused_with_what_to_do(values, field, says):
    with pytest.raises(ValidationError) as refused:
        Schedule.objects.create(name="hand made", schedule_type=Schedule.DAILY, **values)
    assert says in " ".join(refused.value.message_dict[field])
    assert not Schedule.objects.exists()
    assert "sync_schedules" in schedule_refusals(func="os.system")["func"]  # the message says what to do


def test_a_registered_job_saves_and_the_schedulers_own_saves_pass():
    row = Schedule.objects.create(name="nightly", func=JOB, schedule_type=Schedule.DAILY, kwargs="days=30")
    row.repeats = 3  # what django-q2's scheduler changes when it runs a row
    row.save()
    Schedule.objects.filter(pk=row.pk).update(func="os.system")  # stored behind the check's back
    legacy = Schedule.objects.get(pk=row.pk)
    legacy.next_run = timezone.now()
    legacy.save()  # unchanged function: the scheduler's save passes, and sync_schedules switches the row off
    legacy.func = "subprocess.call"
    with pytest.raises(ValidationError):
        legacy.save()


def test_sync_switches_off_rows_stored_before_the_check_and_says_so():
    Schedule.objects.create(name="ok", func=JOB, schedule_type=Schedule.DAILY)
    bad = Schedule.objects.create(name="bad", func=JOB, schedule_type=Schedule.DAILY)
    Schedule.objects.filter(pk=bad.pk).update(func="os.system")
    dry = sync_schedules(dry_run=True)
    assert dry.disabled == ["bad (os.system is not a registered job)"]
    assert Schedule.objects.get(pk=bad.pk).repeats == -1
    summary = sync_schedules()
    assert "switch off bad (os.system is not a registered job)" in summary.lines()
    assert Schedule.objects.get(pk=bad.pk).repeats == 0  # django-q2's scheduler skips it
    assert Schedule.objects.get(name="ok").repeats == -1
    assert sync_schedules().disabled == []


@pytest.fixture
def staff_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def _add(staff_client, **values):
    data = {
        "name": "hand made",
        "func": JOB,
        "schedule_type": Schedule.DAILY,
        "repeats": "-1",
        "next_run_0": "2030-01-01",
        "next_run_1": "03:00:00",
        **values,
    }
    return staff_client.post(reverse("admin:django_q_schedule_add"), data)


def test_the_schedule_form_offers_registered_jobs_and_refuses_any_other_function(staff_client):
    page = staff_client.get(reverse("admin:django_q_schedule_add")).content.decode()
    assert f'<option value="{JOB}">audit retention ({JOB})</option>' in page
    assert 'name="hook"' not in page
    refused = _add(staff_client, func="os.system")
    assert refused.status_code == 200 and not Schedule.objects.exists()
    assert "Select a valid choice" in refused.content.decode()
    refused = _add(staff_client, kwargs="q_options={'hook': 'os.system'}")
    assert "q_options is not allowed" in refused.content.decode() and not Schedule.objects.exists()
    assert _add(staff_client).status_code == 302
    assert Schedule.objects.get().func == JOB


def test_a_schedule_declared_in_code_is_read_only_in_the_admin(staff_client):
    sync_schedules()
    row = Schedule.objects.get(name="owlat:audit retention")
    url = reverse("admin:django_q_schedule_change", args=[row.pk])
    page = staff_client.get(url)
    assert page.status_code == 200 and "declared in code" in page.content.decode()
    assert staff_client.post(url, {"name": "owlat:audit retention", "func": JOB}).status_code == 403


def _failure(func="owlat.audit.audit_purge_task", hook=None):
    now = timezone.now()
    return Failure.objects.create(
        id=f"t-{func}",
        name="silly-name",
        func=func,
        hook=hook,
        args=(),
        kwargs={},
        started=now,
        stopped=now,
        success=False,
        result='boom <b>bad</b> : Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom',
    )


def test_a_failed_task_is_a_readable_read_only_record(staff_client):
    task = _failure()
    url = reverse("admin:django_q_failure_change", args=[task.pk])
    page = staff_client.get(url).content.decode()
    assert "boom &lt;b&gt;bad&lt;/b&gt;" in page and "<b>bad</b>" not in page  # escaped text
    assert '<pre style="white-space:pre-wrap;font-size:12px">Traceback (most recent call last):' in page
    assert "<textarea" not in page and 'name="result"' not in page
    assert staff_client.post(url, {"name": "x"}).status_code == 403


def test_running_a_task_again_is_refused_unless_it_is_a_project_function_without_a_hook(staff_client):
    own, foreign, hooked = (
        _failure(),
        _failure("os.system"),
        _failure("owlat.jobs.heartbeat_task", "os.system"),
    )
    response = staff_client.post(
        reverse("admin:django_q_failure_changelist"),
        {"action": "resubmit_task", "_selected_action": [own.pk, foreign.pk, hooked.pk]},
        follow=True,
    )
    text = response.content.decode()
    assert "os.system is not one of the project&#x27;s functions" in text and "it names a hook" in text
    assert OrmQ.objects.count() == 1  # only the project's own task was queued again
    assert list(Failure.objects.values_list("func", flat=True).order_by("func")) == [
        "os.system",
        "owlat.jobs.heartbeat_task",
    ]
