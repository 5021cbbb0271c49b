"""Periodic jobs as code (spec DOM-19, D-05): each app declares `SCHEDULES` in `<app>/schedules.py`, and
`sync_schedules()` (run by `manage.py sync_schedules` at start-up) upserts them as django-q2 cron schedules.

A declaration is `ScheduleSpec(name, func, cron)`, optionally with `queue` (a django-q2 cluster of
`Q_CLUSTER["ALT_CLUSTERS"]`; default queue otherwise). Rows are named `owlat:<name>`; rows with that prefix
that are no longer declared are removed, rows without it (made by hand in the admin) are left alone.
Running the sync twice changes nothing the second time.

The declared schedules are also the project's job registry: a django-q2 `Schedule` row may only run a function
some app declares (`registered_jobs()`), with no hook, literal arguments and a known queue. This is checked
whenever a row is saved with a new or changed function, hook, arguments or queue — the admin's form, any ORM
save (a `pre_save` receiver, django-q2's model being a third party's) and `sync_schedules` alike
(`schedule_refusals`); the sync also switches off rows stored before the check whose function is not
registered (`repeats = 0`, which django-q2's scheduler skips), and says so.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
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
    disabled: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed or self.disabled)

    def lines(self) -> list[str]:
        verb = "would " if self.dry_run else ""
        out = [f"{verb}create {n}" for n in self.created]
        out += [f"{verb}update {n}" for n in self.updated]
        out += [f"{verb}remove {n}" for n in self.removed]
        out += [f"{verb}switch off {n}" for n in self.disabled]
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
        _switch_off_unregistered(summary, dry_run=dry_run)
    summary.removed = sorted(set(summary.removed))
    return summary


# --- the job registry: what a schedule may run ---------------------------------------------------------------


@lru_cache(maxsize=1)
def registered_jobs() -> dict[str, str]:
    """Every function an app declares as a periodic job (dotted path → the declared schedule's name)."""
    jobs: dict[str, str] = {}
    for spec in collect_schedules():
        jobs.setdefault(spec.func_path, spec.name)
    return jobs


_REFUSED_FUNC = (
    "{func!r} is not a registered job: a schedule runs only a job an app declares in its schedules.py "
    "(pick one from the list). To run something new, declare it there in code and run manage.py sync_schedules."
)


def _literal(text: str | None, field_name: str) -> tuple[Any, str | None]:
    """django-q2's reading of a schedule's `args` / `kwargs` text, or the refusal naming what to write."""
    if not text:
        return None, None
    try:
        if field_name == "args":
            return ast.literal_eval(text), None
        try:
            return ast.literal_eval(text), None
        except (SyntaxError, ValueError):
            call = ast.parse(f"f({text})", mode="eval").body
            if not isinstance(call, ast.Call) or call.args:
                raise ValueError from None
            return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}, None
    except (SyntaxError, ValueError, TypeError):
        example = "1, 'two'" if field_name == "args" else "days=30, name='x'"
        return None, f"Write plain values only, such as {example}."


def schedule_refusals(
    *,
    func: str,
    hook: str | None = None,
    args: str | None = None,
    kwargs: str | None = None,
    cluster: str | None = None,
) -> dict[str, str]:
    """Why a schedule with these values may not be saved, per field (empty: it may)."""
    from django.conf import settings

    out: dict[str, str] = {}
    if func not in registered_jobs():
        out["func"] = _REFUSED_FUNC.format(func=func)
    if hook:
        out["hook"] = "A schedule takes no hook: leave it empty (a job records its own outcome)."
    _, problem = _literal(args, "args")
    if problem:
        out["args"] = problem
    values, problem = _literal(kwargs, "kwargs")
    if problem:
        out["kwargs"] = problem
    elif isinstance(values, dict) and "q_options" in values:
        out["kwargs"] = "q_options is not allowed: it could name a hook to run. Remove it."
    elif values is not None and not isinstance(values, dict):
        out["kwargs"] = "Write keyword arguments as name=value pairs, such as days=30."
    queues = settings.Q_CLUSTER.get("ALT_CLUSTERS", {})
    if cluster and cluster not in queues:
        out["cluster"] = (
            f"Unknown queue {cluster!r}: leave it empty (default) or pick one of {', '.join(queues)}."
        )
    return out


_CHECKED = ("func", "hook", "args", "kwargs", "cluster")


def schedule_pre_save(sender: Any, instance: Any, raw: bool = False, **kwargs: Any) -> None:
    """`pre_save` of django-q2's `Schedule`: refuse a new row, or a changed function, hook, arguments or
    queue, that `schedule_refusals` refuses (django-q2's scheduler saves each row it runs; those pass)."""
    from django.core.exceptions import ValidationError

    values = {name: getattr(instance, name) for name in _CHECKED}
    if instance.pk is not None:
        stored = type(instance)._base_manager.filter(pk=instance.pk).values(*_CHECKED).first()
        if stored == values:
            return
    refusals = schedule_refusals(**values)
    if refusals:
        raise ValidationError(refusals)


def _switch_off_unregistered(summary: SyncSummary, *, dry_run: bool) -> None:
    """Rows stored before the registry existed may name any function: switch off those that run one it does
    not hold (`repeats = 0`; the scheduler skips them), without saving them through `pre_save`."""
    from django_q.models import Schedule

    jobs = registered_jobs()
    rows = Schedule.objects.exclude(repeats=0).exclude(func__in=list(jobs)).values_list("pk", "name", "func")
    for pk, name, func in rows:
        summary.disabled.append(f"{name or pk} ({func} is not a registered job)")
        if not dry_run:
            Schedule.objects.filter(pk=pk).update(repeats=0)
