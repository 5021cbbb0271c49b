"""Periodic jobs as code (spec DOM-19, D-05): each app declares `SCHEDULES` in `<app>/schedules.py`, and
`sync_schedules()` (run by `manage.py sync_schedules` at start-up) upserts them as django-q2 cron schedules.

A declaration is `ScheduleSpec(name, func, cron)`, optionally with `queue` (a django-q2 cluster of
`Q_CLUSTER["ALT_CLUSTERS"]`; default queue otherwise). Rows are named `owlat:<name>`; rows with that prefix
that are no longer declared are removed, rows without it (made by hand in the admin) are left alone.
Running the sync twice changes nothing the second time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

#: Where schedules are declared, lowest layer first. A module that does not exist is skipped.
SCHEDULE_MODULES = (
    "owlat.kernel_schedules",
    "owlat.api.schedules",
    "templates.schedules",
    "delivery.schedules",
    "automations.schedules",
    "campaigns.schedules",
    "inbox.schedules",
)
NAME_PREFIX = "owlat:"


@dataclass(frozen=True)
class ScheduleSpec:
    """One periodic job: a unique `name`, the task (`func`, dotted path or callable) and a 5-field `cron`."""

    name: str
    func: str | Callable[..., Any]
    cron: str
    queue: str | None = None

    @property
    def func_path(self) -> str:
        if isinstance(self.func, str):
            return self.func
        return f"{self.func.__module__}.{self.func.__qualname__}"

    @property
    def schedule_name(self) -> str:
        return NAME_PREFIX + self.name

    @property
    def cluster(self) -> str | None:
        return None if self.queue in (None, "default") else self.queue


@dataclass
class SyncSummary:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed)

    def lines(self) -> list[str]:
        verb = "would " if self.dry_run else ""
        out = [f"{verb}create {n}" for n in self.created]
        out += [f"{verb}update {n}" for n in self.updated]
        out += [f"{verb}remove {n}" for n in self.removed]
        out.append(
            f"{'dry run: ' if self.dry_run else ''}{len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.removed)} removed"
        )
        return out


def _validate(spec: ScheduleSpec, origin: str) -> None:
    from croniter import croniter

    if not spec.name or len(spec.schedule_name) > 100:
        raise ImproperlyConfigured(f"{origin}: schedule name {spec.name!r} is empty or too long")
    if not croniter.is_valid(spec.cron):
        raise ImproperlyConfigured(f"{origin}: schedule {spec.name!r} has an invalid cron {spec.cron!r}")
    try:
        target = import_string(spec.func_path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"{origin}: schedule {spec.name!r}: cannot import {spec.func_path}"
        ) from exc
    if not callable(target):
        raise ImproperlyConfigured(f"{origin}: schedule {spec.name!r}: {spec.func_path} is not callable")
    if spec.cluster is not None:
        from django.conf import settings

        if spec.cluster not in settings.Q_CLUSTER.get("ALT_CLUSTERS", {}):
            raise ImproperlyConfigured(f"{origin}: schedule {spec.name!r}: unknown queue {spec.queue!r}")


def collect_schedules(modules: Iterable[str] = SCHEDULE_MODULES) -> list[ScheduleSpec]:
    """Every declared schedule, validated (cron, importable function, unique names)."""
    specs: list[ScheduleSpec] = []
    seen: dict[str, str] = {}
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # only the absence of the schedules module itself (or its package) is skipped; a broken import
            # inside an existing module is an error
            if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                continue
            raise
        for spec in getattr(module, "SCHEDULES", []):
            if not isinstance(spec, ScheduleSpec):
                raise ImproperlyConfigured(f"{module_name}.SCHEDULES holds {spec!r}, not a ScheduleSpec")
            _validate(spec, module_name)
            if spec.name in seen:
                raise ImproperlyConfigured(
                    f"schedule name {spec.name!r} is declared in both {seen[spec.name]} and {module_name}"
                )
            seen[spec.name] = module_name
            specs.append(spec)
    return specs


def _next_run(cron: str) -> Any:
    from croniter import croniter

    return croniter(cron, timezone.localtime()).get_next(type(timezone.localtime()))


def sync_schedules(*, dry_run: bool = False, specs: Iterable[ScheduleSpec] | None = None) -> SyncSummary:
    """Upsert the declared schedules as django-q2 cron `Schedule` rows by name; remove stale `owlat:` rows."""
    from django_q.models import Schedule

    specs = collect_schedules() if specs is None else list(specs)
    summary = SyncSummary(dry_run=dry_run)
    wanted = {spec.schedule_name: spec for spec in specs}
    with transaction.atomic():
        existing: dict[str, Any] = {}
        for row in Schedule.objects.select_for_update().filter(name__startswith=NAME_PREFIX).order_by("id"):
            if row.name in existing or row.name not in wanted:
                summary.removed.append(row.name)
                if not dry_run:
                    row.delete()
            else:
                existing[row.name] = row
        for name, spec in wanted.items():
            row = existing.get(name)
            desired = {
                "func": spec.func_path,
                "schedule_type": Schedule.CRON,
                "cron": spec.cron,
                "cluster": spec.cluster,
                "repeats": -1,
                "args": None,
                "kwargs": None,
                "hook": None,
            }
            if row is None:
                summary.created.append(name)
                if not dry_run:
                    Schedule.objects.create(name=name, next_run=_next_run(spec.cron), **desired)
                continue
            changes = {k: v for k, v in desired.items() if getattr(row, k) != v}
            if not changes:
                summary.unchanged.append(name)
                continue
            summary.updated.append(name)
            if not dry_run:
                for key, value in changes.items():
                    setattr(row, key, value)
                if "cron" in changes or "schedule_type" in changes:
                    row.next_run = _next_run(spec.cron)
                row.save()
    summary.removed = sorted(set(summary.removed))
    return summary
