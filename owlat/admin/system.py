"""Third-party screens re-registered on django-unfold's `ModelAdmin` so they share the theme: users and groups
(django.contrib.auth) and django-q2's tasks and schedules.

Users and groups keep the original admins' behaviour. django-q2's screens are made safe to operate: a schedule
runs only a job of the project's job registry (`owlat.schedules`), picked from a list, with no hook and literal
arguments; schedules declared in code (`owlat:` names) are shown read-only, being the apps' to change; finished
tasks are read-only records whose error and traceback are shown as text; re-queueing a task is refused unless it
runs a project function without a hook."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin as BaseGroupAdmin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.models import Group
from django.http import HttpRequest
from django.utils.html import format_html
from django_q import admin as q_admin
from django_q.models import Failure, OrmQ, Schedule, Success
from unfold.admin import ModelAdmin
from unfold.forms import AdminPasswordChangeForm, UserChangeForm, UserCreationForm

from owlat.schedules import NAME_PREFIX, registered_jobs, schedule_refusals

User = get_user_model()
PROJECT_PACKAGES = ("owlat.", "templates.", "delivery.", "automations.", "campaigns.", "inbox.")


def _reregister(model: type, admin_class: type) -> None:
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, admin_class)


class UserAdmin(BaseUserAdmin, ModelAdmin):
    form = UserChangeForm
    add_form = UserCreationForm
    change_password_form = AdminPasswordChangeForm


class GroupAdmin(BaseGroupAdmin, ModelAdmin):
    pass


# --- schedules -------------------------------------------------------------------------------------------------


class ScheduleForm(forms.ModelForm):
    """A schedule of a registered job: the job and its queue are pickers, nothing else names code."""

    func = forms.ChoiceField(
        label="Job",
        help_text="The jobs the apps declare (their schedules.py). A new job is declared there in code.",
    )
    cluster = forms.ChoiceField(
        label="Queue", required=False, help_text="The worker queue that runs it; empty is the default queue."
    )

    class Meta:
        model = Schedule
        fields = (
            "name",
            "func",
            "args",
            "kwargs",
            "schedule_type",
            "minutes",
            "cron",
            "repeats",
            "next_run",
            "cluster",
        )
        help_texts = {
            "args": "Optional plain values, such as 1, 'two'. Most jobs take none.",
            "kwargs": "Optional name=value pairs of plain values, such as days=30. Most jobs take none.",
            "cron": "With the Cron type: five fields, minute hour day month weekday, such as 17 3 * * *.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        jobs = sorted(
            ((path, f"{name} ({path})") for path, name in registered_jobs().items()), key=lambda c: c[1]
        )
        self.fields["func"].choices = [("", "— pick a job —"), *jobs]
        queues = settings.Q_CLUSTER.get("ALT_CLUSTERS", {})
        self.fields["cluster"].choices = [("", "default"), *((name, name) for name in queues)]

    def clean_cluster(self) -> str | None:
        return self.cleaned_data.get("cluster") or None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        refusals = schedule_refusals(
            func=data.get("func") or "",
            hook=None,
            args=data.get("args"),
            kwargs=data.get("kwargs"),
            cluster=data.get("cluster"),
        )
        for field_name, message in refusals.items():
            if field_name in self.fields and field_name not in self.errors:
                self.add_error(field_name, message)
        return data


class ScheduleAdmin(q_admin.ScheduleAdmin, ModelAdmin):
    form = ScheduleForm

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and (obj.name or "").startswith(NAME_PREFIX):
            return False  # declared in code: sync_schedules would undo an edit
        return super().has_change_permission(request, obj)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ):
        obj = self.get_object(request, object_id)
        if obj is not None and (obj.name or "").startswith(NAME_PREFIX):
            self.message_user(
                request,
                "This schedule is declared in code (its app's schedules.py) and kept by sync_schedules: "
                "change it there. To run the job at other times too, add a schedule of your own.",
                messages.INFO,
            )
        return super().change_view(request, object_id, form_url, extra_context)


# --- finished tasks and the queue ---------------------------------------------------------------------------------


def _resubmit_refusal(task: Any) -> str | None:
    if task.hook:
        return "it names a hook"
    if task.func not in registered_jobs() and not str(task.func).startswith(PROJECT_PACKAGES):
        return f"{task.func} is not one of the project's functions"
    return None


@admin.action(description="Run the selected tasks again")
def resubmit_task(model_admin: Any, request: HttpRequest, queryset: Any) -> None:
    """django-q2's resubmit, for tasks that run a project function without a hook; the others are named."""
    allowed = []
    for task in queryset:
        refusal = _resubmit_refusal(task)
        if refusal:
            model_admin.message_user(
                request,
                f"Not run again: {task.name}: {refusal}. Only the project's own tasks are re-run.",
                messages.ERROR,
            )
        else:
            allowed.append(task.pk)
    if allowed:
        again = queryset.model.objects.filter(pk__in=allowed)
        q_admin.resubmit_task(model_admin, request, again)
        if queryset.model is Failure:
            again.delete()  # as django-q2's own action: the failure is queued again, its record goes
        model_admin.message_user(request, f"{len(allowed)} task(s) queued again.", messages.SUCCESS)


class _FinishedTaskAdmin(ModelAdmin):
    """A finished task as a read-only record: what ran, when, and its result or error as text."""

    actions = [resubmit_task]
    search_fields = ("name", "func", "group")
    list_filter = ("group", "cluster")
    fields = (
        "name",
        "func",
        "group",
        "cluster",
        "arguments",
        "started",
        "stopped",
        "time_taken",
        "attempt_count",
    )

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return self.fields

    @admin.display(description="arguments")
    def arguments(self, obj: Any) -> str:
        return format_html("<code>{}</code>", f"args={obj.args!r}, kwargs={obj.kwargs!r}")

    @admin.display(description="time taken (s)")
    def time_taken(self, obj: Any) -> str:
        return f"{obj.time_taken():.3f}" if obj.started and obj.stopped else "—"


class TaskAdmin(_FinishedTaskAdmin):
    list_display = ("name", "func", "group", "cluster", "started", "stopped", "time_taken")
    fields = (*_FinishedTaskAdmin.fields, "result_text")

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).filter(success=True)

    @admin.display(description="result")
    def result_text(self, obj: Any) -> str:
        return format_html('<pre style="white-space:pre-wrap">{}</pre>', repr(obj.result))


class FailAdmin(_FinishedTaskAdmin):
    list_display = ("name", "func", "group", "cluster", "started", "stopped", "error")
    fields = (*_FinishedTaskAdmin.fields, "error", "traceback")

    @staticmethod
    def _parts(obj: Any) -> tuple[str, str]:
        """django-q2 stores a failure as `'<error> : <traceback>'`."""
        text = str(obj.result or "")
        error, _, trace = text.partition(" : Traceback")
        return error.strip() or "(no message)", ("Traceback" + trace) if trace else ""

    @admin.display(description="error")
    def error(self, obj: Any) -> str:
        message = self._parts(obj)[0]
        return message if len(message) <= 300 else message[:299] + "…"

    @admin.display(description="traceback")
    def traceback(self, obj: Any) -> str:
        trace = self._parts(obj)[1]
        if not trace:
            return "—"
        return format_html('<pre style="white-space:pre-wrap;font-size:12px">{}</pre>', trace)


class QueueAdmin(q_admin.QueueAdmin, ModelAdmin):
    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a queued task's payload is signed work: shown, never edited


_reregister(User, UserAdmin)
_reregister(Group, GroupAdmin)
_reregister(Schedule, ScheduleAdmin)
_reregister(Success, TaskAdmin)
_reregister(Failure, FailAdmin)
if admin.site.is_registered(OrmQ):
    _reregister(OrmQ, QueueAdmin)
