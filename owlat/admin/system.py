"""Third-party screens re-registered on django-unfold's `ModelAdmin` so they share the theme: users and groups
(django.contrib.auth) and django-q2's tasks and schedules. Behaviour and permissions are those of the original
admins; only the base class (styling, widgets) changes."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin as BaseGroupAdmin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.models import Group
from django_q import admin as q_admin
from django_q.models import Failure, OrmQ, Schedule, Success
from unfold.admin import ModelAdmin
from unfold.forms import AdminPasswordChangeForm, UserChangeForm, UserCreationForm

User = get_user_model()


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


class ScheduleAdmin(q_admin.ScheduleAdmin, ModelAdmin):
    pass


class TaskAdmin(q_admin.TaskAdmin, ModelAdmin):
    pass


class FailAdmin(q_admin.FailAdmin, ModelAdmin):
    pass


class QueueAdmin(q_admin.QueueAdmin, ModelAdmin):
    pass


_reregister(User, UserAdmin)
_reregister(Group, GroupAdmin)
_reregister(Schedule, ScheduleAdmin)
_reregister(Success, TaskAdmin)
_reregister(Failure, FailAdmin)
if admin.site.is_registered(OrmQ):
    _reregister(OrmQ, QueueAdmin)
