"""Phases 1 and 1b of `automation_throughput.py`, at each size: the events API and the walker behind it
(events posted by concurrent clients), then the walker alone (runs opened in one transaction, then walked)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from automation_latency import cpu_per_event, cpu_usage
from automation_load import Live, post_event
from measure import cpu_seconds, peak_rss_mib, reset_peak_rss, tree_pids, wait_for


def throughput_at_sizes(live: Live, sizes: list[int]) -> list[dict]:
    """Phase 1: `size` events posted through the API by `--clients` clients, for each size; a row per size."""
    from django.db.models import Max, Min

    from automations.models import AutomationRun, AutomationStepRun

    args, base, keys, sink, accepted = live.args, live.base, live.keys, live.sink, live.accepted
    web, automation, roots = live.web, live.automation, live.roots
    per_size: list[dict] = []
    for size in sizes:
        print(f"phase 1 at {size} events: {args.clients} clients over {args.keys} keys", flush=True)
        sink.clear()
        pids = tree_pids(roots)
        reset_peak_rss(pids)
        before = set(AutomationRun.objects.values_list("pk", flat=True))
        load = live.emails[f"load-{size}"]
        components = {name: [proc.pid] for name, proc in live.workers.procs.items()} | {"web": [web.pid]}
        cpu_before = cpu_usage(components)
        web_cpu = cpu_seconds(tree_pids([web.pid]))
        t0 = time.monotonic()
        with ThreadPoolExecutor(args.clients) as pool:
            out = list(
                pool.map(lambda i, load=load: post_event(base, keys[i % len(keys)], load[i]), range(size))
            )
        t_api = max(o[2] for o in out) - t0
        web_cpu = 1000 * (cpu_seconds(tree_pids([web.pid])) - web_cpu) / size
        # Where the machine's CPU went while the API was being measured (the workers run beside it).
        cpu_ms = cpu_per_event(cpu_before, cpu_usage(components), size)
        bad = [o[0] for o in out if o[0] != 201]
        events_per_s = (size - len(bad)) / t_api
        print(
            f"  API accepted {size - len(bad)} events in {t_api:.1f} s → {events_per_s:.1f} events/s "
            f"(web CPU {web_cpu:.1f} ms/request)",
            flush=True,
        )
        print(
            "  CPU ms per event while the API was measured: "
            + ", ".join(f"{name} {ms:.1f}" for name, ms in cpu_ms.items()),
            flush=True,
        )
        expected = 2 * (size - len(bad))
        runs = AutomationRun.objects.filter(automation=automation).exclude(pk__in=before)
        step_runs = AutomationStepRun.objects.filter(run__in=runs)
        wait_for(
            lambda expected=expected: accepted() >= expected,
            args.timeout,
            "phase 1 mail",
            lambda expected=expected, step_runs=step_runs: (
                f"{accepted()}/{expected} mails, {step_runs.filter(status='completed').count()} steps"
            ),
        )
        t_last_mail = max(m.received_at for m in sink.messages) - t0
        wait_for(
            lambda runs=runs: not runs.filter(status="running").exists(),
            args.timeout,
            "runs to complete",
            lambda runs=runs: f"{runs.filter(status='running').count()} running",
        )
        span = (
            runs.aggregate(first=Min("started_at"))["first"],
            step_runs.aggregate(last=Max("completed_at"))["last"],
        )
        steps = step_runs.filter(status="completed").count()
        failed = step_runs.filter(status="failed").count()
        walker_seconds = (span[1] - span[0]).total_seconds()
        peak = peak_rss_mib(tree_pids(roots))
        row = {
            "size": size,
            "api_seconds": round(t_api, 2),
            "api_errors": len(bad),
            "events_per_second": round(events_per_s, 1),
            "web_cpu_ms_per_request": round(web_cpu, 2),
            "api_window_cpu_ms_per_event": cpu_ms,
            "steps": steps,
            "failed_steps": failed,
            "walker_seconds": round(walker_seconds, 2),
            "steps_per_second": round(steps / walker_seconds, 1),
            "ms_per_step": round(1000 * walker_seconds / max(steps, 1), 3),
            "mails": accepted(),
            "last_mail_seconds": round(t_last_mail, 2),
            "peak_rss_mib": round(peak, 1),
            "load_average": os.getloadavg()[0],
        }
        per_size.append(row)
        print(
            f"  walker: {steps} steps ({failed} failed) in {walker_seconds:.1f} s → "
            f"{row['steps_per_second']:.1f} steps/s ({row['ms_per_step']:.2f} ms/step); {accepted()} mails, last "
            f"SMTP acceptance {t_last_mail:.1f} s after the first request; peak RSS of the API and workers "
            f"{peak:.0f} MiB; load {row['load_average']:.1f}",
            flush=True,
        )
    return per_size


def walker_alone_at_sizes(live: Live, sizes: list[int], per_size: list[dict]) -> None:
    """Phase 1b: `size` runs opened in one transaction (no API in the way), timed from the commit to the last
    completed step; each size's figures are added to its phase-1 row."""
    from django.db import transaction
    from django.db.models import Max
    from django.utils import timezone

    from automations.models import AutomationRun, AutomationStepRun
    from automations.triggers import automation_fanout
    from owlat.models import Contact
    from owlat.registry import TriggerEvent

    args, sink, accepted, automation, roots = live.args, live.sink, live.accepted, live.automation, live.roots
    org_id = str(automation.organization_id)
    for row, size in zip(per_size, sizes, strict=True):
        sink.clear()
        pids = tree_pids(roots)
        reset_peak_rss(pids)
        before = set(AutomationRun.objects.values_list("pk", flat=True))
        contact_ids = list(
            Contact.objects.filter(email__in=live.emails[f"walk-{size}"]).values_list("pk", flat=True)
        )
        with transaction.atomic():
            for contact_id in contact_ids:
                automation_fanout(
                    TriggerEvent("event_received", org_id, str(contact_id), {"eventName": "bench"})
                )
        started = timezone.now()
        runs = AutomationRun.objects.filter(automation=automation).exclude(pk__in=before)
        step_runs = AutomationStepRun.objects.filter(run__in=runs)
        wait_for(
            lambda size=size: accepted() >= 2 * size,
            args.timeout,
            "walker mail",
            lambda size=size: f"{accepted()}/{2 * size} mails",
        )
        wait_for(
            lambda runs=runs: not runs.filter(status="running").exists(),
            args.timeout,
            "walker runs to complete",
            lambda runs=runs: f"{runs.filter(status='running').count()} running",
        )
        last = step_runs.aggregate(last=Max("completed_at"))["last"]
        steps = step_runs.filter(status="completed").count()
        seconds = (last - started).total_seconds()
        peak = peak_rss_mib(tree_pids(roots))
        row.update(
            walker_alone_steps=steps,
            walker_alone_seconds=round(seconds, 2),
            walker_alone_steps_per_second=round(steps / seconds, 1),
            walker_alone_ms_per_step=round(1000 * seconds / max(steps, 1), 3),
            walker_alone_peak_rss_mib=round(peak, 1),
            walker_alone_load=os.getloadavg()[0],
        )
        print(
            f"  walker alone at {size} runs: {steps} steps in {seconds:.1f} s → {steps / seconds:.1f} steps/s, "
            f"{accepted()} mails; peak RSS {peak:.0f} MiB; load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
