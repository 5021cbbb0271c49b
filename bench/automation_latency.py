"""Phase 2 of `automation_throughput.py`: event → first email latency at a fixed offered rate (open loop, new
contacts), and where it goes — each hop's median and p95 from the client's and the sink's clocks and the rows' own
timestamps, and the CPU milliseconds per event of each process."""

from __future__ import annotations

import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from automation_load import Live, post_event
from measure import cpu_by_pid, cpu_seconds, cpu_since, percentile, tree_pids, wait_for

# (hop, from, to): the instants are the client's (call start, 201 received), the rows' own timestamps and the sink's
# acceptance; each hop's median and p95 are printed, so the hops' share of the end-to-end median is visible.
HOPS = [
    ("API call → fan-out (request before the trigger)", "call", "run_started"),
    ("fan-out → 201 received (rest of request, commit)", "run_started", "response"),
    ("201 → walker claims step 0 (broker poll, queue)", "response", "step_started"),
    ("walker claim → send row prepared", "step_started", "send_queued"),
    ("send prepared → delivery claims (commit, broker)", "send_queued", "send_claimed"),
    ("delivery claim → handed to SMTP", "send_claimed", "handed_off"),
    ("handed to SMTP → accepted by the sink", "handed_off", "accepted"),
]


def latency_breakdown(
    automation,
    emails: list[str],
    started: dict[str, float],
    ended: dict[str, float],
    accepted: dict[str, float],
) -> list[dict]:
    """Per-hop latency of phase 2 from the rows' own timestamps (wall clock, converted to this process's
    monotonic clock; every process runs on this machine)."""
    from automations.models import AutomationStepRun
    from delivery.models import TransactionalSend

    offset = time.time() - time.monotonic()

    def mono(value) -> float | None:
        return None if value is None else value.timestamp() - offset

    step_runs = AutomationStepRun.objects.filter(
        run__automation=automation, run__contact__email__in=emails, step_index=0
    ).values_list("run__contact__email", "run__started_at", "started_at", "email_send_id")
    sends = {
        str(pk): row
        for pk, *row in TransactionalSend.objects.filter(
            automation_id=automation.pk, contact__email__in=emails
        ).values_list("pk", "queued_at", "claimed_at", "handed_off_at")
    }
    spans: dict[str, list[float]] = {name: [] for name, _, _ in HOPS}
    for email, run_started, step_started, send_id in step_runs:
        send = sends.get(str(send_id))
        if send is None or email not in accepted or email not in started:
            continue
        at = {
            "call": started[email],
            "response": ended[email],
            "run_started": mono(run_started),
            "step_started": mono(step_started),
            "send_queued": mono(send[0]),
            "send_claimed": mono(send[1]),
            "handed_off": mono(send[2]),
            "accepted": accepted[email],
        }
        for name, a, b in HOPS:
            if at[a] is not None and at[b] is not None:
                spans[name].append(at[b] - at[a])
    return [
        {
            "hop": name,
            "n": len(values),
            "p50_ms": round(percentile(values, 0.5) * 1000, 1) if values else None,
            "p95_ms": round(percentile(values, 0.95) * 1000, 1) if values else None,
        }
        for name, values in spans.items()
    ]


def cpu_usage(components: dict[str, list[int]]) -> dict[str, float | dict[int, float]]:
    """CPU used so far by each component's process tree (seconds), this process (client and sink) and the
    PostgreSQL backends serving the benchmark database (seconds per backend: `cpu_per_event` counts each
    backend's own difference, so a backend that ended in between is left out instead of making the sum go back)."""
    from django.db import connection

    out: dict[str, float | dict[int, float]] = {
        name: cpu_seconds(tree_pids(roots)) for name, roots in components.items()
    }
    out["bench (client, sink)"] = cpu_seconds([os.getpid()])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        out["postgres"] = cpu_by_pid([row[0] for row in cursor.fetchall()])
    return out


def cpu_per_event(before: dict, after: dict, n: int) -> dict[str, float]:
    """CPU milliseconds per event of each component between two `cpu_usage` snapshots."""
    out = {}
    for name, used in after.items():
        if isinstance(used, dict):
            seconds = cpu_since(before.get(name, {}), used)
        else:
            seconds = used - before.get(name, 0.0)
        out[name] = round(1000 * seconds / n, 2)
    return out


def print_breakdown(hops: list[dict]) -> None:
    total = sum(h["p50_ms"] or 0 for h in hops) or 1.0
    print("  where it goes (per hop, from the rows' own timestamps; medians do not add up exactly):")
    for h in hops:
        p50 = "—" if h["p50_ms"] is None else f"{h['p50_ms']:.0f}"
        p95 = "—" if h["p95_ms"] is None else f"{h['p95_ms']:.0f}"
        share = f"{100 * (h['p50_ms'] or 0) / total:.0f} %"
        print(f"    {h['hop']:<50} p50 {p50:>6} ms  p95 {p95:>6} ms  {share:>5} of the sum of medians")


def latency_phase(live: Live, n_lat: int) -> dict:
    """Phase 2: `n_lat` events offered at `--rate` per second; the figures for the results."""
    args, base, keys, sink, workers, web = live.args, live.base, live.keys, live.sink, live.workers, live.web
    print(f"phase 2: {args.rate:g} events/s for {args.seconds:g} s (open loop)", flush=True)
    sink.clear()
    lat_emails = live.emails["lat"]
    call_started: dict[str, float] = {}
    codes2: list[int] = []
    lock = threading.Lock()

    call_ended: dict[str, float] = {}

    def fire(i: int) -> None:
        email = lat_emails[i]
        code, start, end = post_event(base, keys[i % len(keys)], email)
        with lock:
            call_started[email] = start
            call_ended[email] = end
            codes2.append(code)

    components = {name: [proc.pid] for name, proc in workers.procs.items()} | {"web": [web.pid]}
    cpu_before = cpu_usage(components)
    t0 = time.monotonic()
    with ThreadPoolExecutor(args.latency_clients) as pool:
        for i in range(n_lat):
            due = t0 + i / args.rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(fire, i)
    offered_seconds = time.monotonic() - t0
    wait_for(
        lambda: len({m.rcpt_tos[0] for m in list(sink.messages)}) >= n_lat,
        args.timeout,
        "phase 2 first mails",
        lambda: f"{len({m.rcpt_tos[0] for m in list(sink.messages)})}/{n_lat} contacts reached",
    )
    cpu_ms = cpu_per_event(cpu_before, cpu_usage(components), n_lat)
    print(
        "  CPU ms per event by process (summed over its children): "
        + ", ".join(f"{name} {ms:.1f}" for name, ms in cpu_ms.items()),
        flush=True,
    )
    first_mail: dict[str, float] = {}
    for m in sink.messages:
        rcpt = m.rcpt_tos[0]
        if rcpt not in first_mail or m.received_at < first_mail[rcpt]:
            first_mail[rcpt] = m.received_at
    latencies = [first_mail[e] - call_started[e] for e in lat_emails if e in first_mail and e in call_started]
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    print(
        f"  {len(latencies)} events offered over {offered_seconds:.1f} s ({sum(c != 201 for c in codes2)} API errors): "
        f"API call → first email accepted p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms, mean {statistics.mean(latencies) * 1000:.0f} ms",
        flush=True,
    )
    hops = latency_breakdown(live.automation, lat_emails, call_started, call_ended, first_mail)
    print_breakdown(hops)
    return {
        "latency_hops": hops,
        "latency_cpu_ms_per_event": cpu_ms,
        "offered_rate": args.rate,
        "offered_seconds": round(offered_seconds, 1),
        "latency_events": len(latencies),
        "latency_p50_ms": round(p50 * 1000),
        "latency_p95_ms": round(p95 * 1000),
        "latency_max_ms": round(max(latencies) * 1000),
    }
