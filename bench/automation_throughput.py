#!/usr/bin/env python
"""Benchmark of the automations engine (issue 4; method per spec D-17).

Setup (not timed): a fresh PostgreSQL database (`BENCH_DATABASE_URL`, default
`postgres://postgres@127.0.0.1:5432/owlat_bench`, dropped and re-created), one organization with a default sender,
an active automation `event_received "bench"`: `0: email → 1: condition (plan equals "pro", both branches fall
through) → 2: email`, the contacts (created before timing), `--keys` API keys with `events:write` (so the per-key
limit of API-04 is not what is measured), real processes: the API (gunicorn, 2 workers × 4 threads), `qcluster`
for the default, transactional and campaign queues, `run_due_tasks`, and the loopback SMTP sink (aiosmtpd) in this
process. Pacing is off (`DELIVERY_TRANSACTIONAL_RATE=0`), `DEBUG=0`.

Phase 1 — throughput: after a warm-up (`--warmup` events, waited for), `--events` (10,000) events are posted
through `POST /api/v1/events` by `--clients` concurrent HTTP clients spread round-robin over the keys.
Printed: events/second accepted by the API (first request sent → last 201 received); walker steps/second over
the whole run (steps executed ÷ first run started → last step run completed); and the end-to-end span until the
last SMTP acceptance.

Sizes (issue 12 item 7's growth check): phase 1 runs at three sizes 10x apart (`--events`/100, /10, `--events`,
or `--sizes a,b,c`), each printing its time and the peak RSS (summed VmHWM, reset per size through
`/proc/<pid>/clear_refs`) of the API and worker processes. Phase 1b then measures the walker alone at the same
sizes: that many runs opened in one transaction (no API in the way), timed from the commit to the last completed
step, every mail actually accepted by the sink — the walker's steps/second, time per step and peak RSS per size.

Baseline — before phase 1, a minimal DRF view that inserts one row (`bench/baseline`, mounted only by the
bench-only settings `bench.baseline.settings` this script gives its gunicorn) gets the same body from the same
clients, as many requests as the largest size: its requests/second is the events API's baseline (issue 12: the
events API ≥ 0.3 × it, measured in the same run). The web tier's CPU milliseconds per request are printed for
both.

Phase 2 — latency: at a fixed offered rate (`--rate`, 50 events/s) for `--seconds` (60 s), open loop, new
contacts; p50/p95/max from the moment the event's API call starts to its first email's SMTP acceptance. Then
where it goes: the median and p95 of each hop (API call → fan-out → 201 → walker claim of step 0 → send row
prepared → delivery claim → handed to SMTP → accepted), from the client's and the sink's clocks and the rows' own
timestamps, and the CPU milliseconds per event of each process (web, each queue's cluster, the dispatcher,
PostgreSQL's backends, this process as client and sink): on a loaded machine the proportions, not the absolute
figures, are what to read.

Targets (issue 12): walker ≥ 300 steps/second (phase 1b at the largest size); p50 under 1 second, p95 under 3;
time per step and peak RSS within 20 % from the smallest to the largest size. The summary prints figure,
baseline (issue 12's figures before the batched walker: 42 steps/s, 41 events/s, p50 37 s), ratio, target and
met/MISSED, with the load average (other work on the machine is included in every figure).

Run: `.venv/bin/python bench/automation_throughput.py` (about 5–10 minutes on a 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
sys.path.insert(0, str(BASE_DIR / "bench"))

from automation_world import build_world, setup_django  # noqa: E402
from common import recreate_database  # noqa: E402
from measure import (  # noqa: E402
    cpu_seconds,
    peak_rss_mib,
    percentile,
    reset_peak_rss,
    tree_pids,
    wait_for,
    wait_http,
)

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench"
TARGET_STEPS_PER_SECOND = 300.0
TARGET_P50_SECONDS = 1.0
TARGET_P95_SECONDS = 3.0
TARGET_GROWTH = 1.2  # time per step and peak RSS from the smallest to the largest size: within 20 %
TARGET_API_RATIO = 0.3  # events API ≥ 0.3 × the requests/s of a minimal DRF view inserting one row (same run)
# The benchmark's processes run with the project's settings plus the baseline view (bench-only, bench/baseline).
BENCH_SETTINGS = "bench.baseline.settings"
# Issue 12's figures before the batched walker (idle 2-core machine, --events 3000 --seconds 30): the baseline
# the ratios are printed against.
BASELINE = {"steps_per_second": 42.0, "events_per_second": 41.0, "p50_ms": 37_000.0}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=10_000, help="the largest phase-1 size")
    p.add_argument(
        "--sizes",
        default="",
        help="comma-separated phase-1 sizes (default: --events/100, --events/10, --events: three sizes 10x apart)",
    )
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--keys", type=int, default=100)
    p.add_argument("--clients", type=int, default=12, help="concurrent HTTP clients in phase 1")
    p.add_argument("--latency-clients", type=int, default=16, help="most concurrent requests in phase 2")
    p.add_argument("--rate", type=float, default=50.0, help="offered events/second in phase 2")
    p.add_argument("--seconds", type=float, default=60.0, help="length of phase 2")
    p.add_argument("--q-workers", type=int, default=2, help="worker processes of the default queue")
    p.add_argument("--transactional-workers", type=int, default=1)
    p.add_argument("--timeout", type=float, default=1800.0, help="give up waiting for a phase after this")
    p.add_argument("--json", default=str(BASE_DIR / "var" / "bench" / "automation_throughput.json"))
    return p.parse_args()


# --- processes -----------------------------------------------------------------------------------------------


def start_processes(args: argparse.Namespace, smtp_url: str, port: int, log_dir: Path):
    import subprocess

    from django.utils import timezone

    from testsupport import WorkerSet, worker_environment

    env = worker_environment(
        {
            "DEBUG": "0",
            "OWLAT_TESTING": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "EMAIL_PROVIDER": "smtp",
            "EMAIL_URL": smtp_url,
            "DELIVERY_TRANSACTIONAL_RATE": "0",
            "DELIVERY_CAMPAIGN_RATE": "0",
            "Q_WORKERS": str(args.q_workers),
            "Q_TRANSACTIONAL_WORKERS": str(args.transactional_workers),
            "LOG_LEVEL": "WARNING",
        }
    )
    log_dir.mkdir(parents=True, exist_ok=True)
    workers = WorkerSet(env, log_dir)
    since = timezone.now()
    names = ("default", "transactional", "dispatcher")  # the campaign pool has nothing to do here
    workers.start(*names)
    workers.wait_ready(*names, since=since, timeout=120)
    web_log = open(log_dir / "web.log", "ab")  # noqa: SIM115 - closed in stop()
    # The web tier as deployed (issue 12 item 7): gunicorn, threaded workers, persistent connections.
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "owlat.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--worker-class",
            "gthread",
            "--preload",
            "--log-level",
            "warning",
        ],
        cwd=BASE_DIR,
        env={**env, "DJANGO_SETTINGS_MODULE": BENCH_SETTINGS},  # + the baseline view (bench/baseline)
        stdout=web_log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return workers, web, web_log


# --- load ----------------------------------------------------------------------------------------------------

_local = threading.local()


def _session():
    import requests

    s = getattr(_local, "session", None)
    if s is None:
        s = requests.Session()
        _local.session = s
    return s


def post_event(base: str, key: str, email: str) -> tuple[int, float, float]:
    start = time.monotonic()
    r = _session().post(
        f"{base}/api/v1/events",
        data=json.dumps({"email": email, "eventName": "bench", "eventProperties": {"source": "bench"}}),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=60,
    )
    return r.status_code, start, time.monotonic()


def post_baseline(base: str, key: str, email: str) -> tuple[int, float, float]:
    """The same request to the minimal DRF view (one row inserted): the events API's baseline."""
    from bench.baseline.urls import BASELINE_PATH

    start = time.monotonic()
    r = _session().post(
        f"{base}/{BASELINE_PATH}",
        data=json.dumps({"email": email, "eventName": "bench", "eventProperties": {"source": "bench"}}),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=60,
    )
    return r.status_code, start, time.monotonic()


def baseline_requests_per_second(
    base: str, keys: list[str], n: int, clients: int, warmup: int, web_pid: int
) -> tuple[float, float]:
    """Requests/s of the minimal DRF view under the same gunicorn, clients and request count as phase 1, and
    the web tier's CPU milliseconds per request."""
    with ThreadPoolExecutor(clients) as pool:
        codes = list(pool.map(lambda i: post_baseline(base, keys[i % len(keys)], "w")[0], range(warmup)))
        assert all(c == 201 for c in codes), codes[:5]
        cpu = cpu_seconds(tree_pids([web_pid]))
        t0 = time.monotonic()
        out = list(pool.map(lambda i: post_baseline(base, keys[i % len(keys)], f"b{i}"), range(n)))
        cpu = cpu_seconds(tree_pids([web_pid])) - cpu
    bad = [o[0] for o in out if o[0] != 201]
    assert not bad, bad[:5]
    return n / (max(o[2] for o in out) - t0), 1000 * cpu / n


# --- where the latency goes --------------------------------------------------------------------------------

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


def cpu_usage(components: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds used so far by each component's process tree, this process (client and sink) and the
    PostgreSQL backends serving the benchmark database."""
    from django.db import connection

    out = {name: cpu_seconds(tree_pids(roots)) for name, roots in components.items()}
    out["bench (client, sink)"] = cpu_seconds([os.getpid()])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        out["postgres"] = cpu_seconds([row[0] for row in cursor.fetchall()])
    return out


def print_breakdown(hops: list[dict]) -> None:
    total = sum(h["p50_ms"] or 0 for h in hops) or 1.0
    print("  where it goes (per hop, from the rows' own timestamps; medians do not add up exactly):")
    for h in hops:
        p50 = "—" if h["p50_ms"] is None else f"{h['p50_ms']:.0f}"
        p95 = "—" if h["p95_ms"] is None else f"{h['p95_ms']:.0f}"
        share = f"{100 * (h['p50_ms'] or 0) / total:.0f} %"
        print(f"    {h['hop']:<50} p50 {p50:>6} ms  p95 {p95:>6} ms  {share:>5} of the sum of medians")


def _terminate(signum, frame):  # SIGTERM → SystemExit, so `finally` stops the processes we started
    raise SystemExit(128 + signum)


def main() -> int:
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    print(f"database {url} (re-created)", flush=True)
    recreate_database(url)
    os.environ["DJANGO_SETTINGS_MODULE"] = BENCH_SETTINGS  # migrates the baseline view's table too
    setup_django(url)

    import logging

    from django.db.models import Max, Min

    logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd's per-command log

    from automations.models import AutomationRun, AutomationStepRun
    from testsupport import SmtpSink, free_port

    n_lat = int(args.rate * args.seconds)
    sizes = (
        [int(x) for x in args.sizes.split(",") if x.strip()]
        if args.sizes
        else [max(1, args.events // 100), max(1, args.events // 10), args.events]
    )
    batches = {"warm": args.warmup, **{f"load-{n}": n for n in sizes}, **{f"walk-{n}": n for n in sizes}}
    world = build_world(args.keys, {**batches, "lat": n_lat})
    keys, emails, automation = world["keys"], world["emails"], world["automation"]
    sink = SmtpSink().start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_dir = BASE_DIR / "var" / "bench" / "logs"
    workers, web, web_log = start_processes(args, sink.url, port, log_dir)
    results: dict = {
        "events": args.events,
        "sizes": sizes,
        "keys": args.keys,
        "clients": args.clients,
        "load_average_at_start": os.getloadavg(),
    }
    try:
        wait_http(f"{base}/api/v1/health")

        def accepted() -> int:
            return len(sink.messages)

        # warm-up: the same path, waited for, then forgotten
        with ThreadPoolExecutor(args.clients) as pool:
            codes = list(
                pool.map(
                    lambda i: post_event(base, keys[i % len(keys)], emails["warm"][i])[0], range(args.warmup)
                )
            )
        assert all(c == 201 for c in codes), codes[:5]
        wait_for(
            lambda: accepted() >= 2 * args.warmup, args.timeout, "warm-up mail", lambda: f"{accepted()} mails"
        )
        sink.clear()

        # --- baseline: the minimal DRF view, same gunicorn, clients and request count as the largest size ----
        baseline_rps, baseline_cpu = baseline_requests_per_second(
            base, keys, sizes[-1], args.clients, args.warmup, web.pid
        )
        print(
            f"baseline: a minimal DRF view inserting one row answered {baseline_rps:.1f} requests/s "
            f"({sizes[-1]} requests, {args.clients} clients; web CPU {baseline_cpu:.1f} ms/request)",
            flush=True,
        )
        results["baseline_requests_per_second"] = round(baseline_rps, 1)
        results["baseline_web_cpu_ms_per_request"] = round(baseline_cpu, 2)

        # --- phase 1: throughput, at each size ---------------------------------------------------------------
        roots = [proc.pid for proc in workers.procs.values()] + [web.pid]
        per_size: list[dict] = []
        for size in sizes:
            print(f"phase 1 at {size} events: {args.clients} clients over {args.keys} keys", flush=True)
            sink.clear()
            pids = tree_pids(roots)
            reset_peak_rss(pids)
            before = set(AutomationRun.objects.values_list("pk", flat=True))
            load = emails[f"load-{size}"]
            web_cpu = cpu_seconds(tree_pids([web.pid]))
            t0 = time.monotonic()
            with ThreadPoolExecutor(args.clients) as pool:
                out = list(
                    pool.map(lambda i, load=load: post_event(base, keys[i % len(keys)], load[i]), range(size))
                )
            t_api = max(o[2] for o in out) - t0
            web_cpu = 1000 * (cpu_seconds(tree_pids([web.pid])) - web_cpu) / size
            bad = [o[0] for o in out if o[0] != 201]
            events_per_s = (size - len(bad)) / t_api
            print(
                f"  API accepted {size - len(bad)} events in {t_api:.1f} s → {events_per_s:.1f} events/s "
                f"(web CPU {web_cpu:.1f} ms/request)",
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
        # --- phase 1b: the walker alone, at each size: runs opened in one transaction, then walked ------------
        from django.db import transaction
        from django.utils import timezone

        from automations.triggers import automation_fanout
        from owlat.models import Contact
        from owlat.registry import TriggerEvent

        org_id = str(automation.organization_id)
        for row, size in zip(per_size, sizes, strict=True):
            sink.clear()
            pids = tree_pids(roots)
            reset_peak_rss(pids)
            before = set(AutomationRun.objects.values_list("pk", flat=True))
            contact_ids = list(
                Contact.objects.filter(email__in=emails[f"walk-{size}"]).values_list("pk", flat=True)
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

        largest = per_size[-1]
        results.update(
            per_size=per_size,
            events_per_second=largest["events_per_second"],
            steps_per_second=largest["walker_alone_steps_per_second"],
            api_path_steps_per_second=largest["steps_per_second"],
            steps=largest["steps"],
            failed_steps=largest["failed_steps"],
        )

        # --- phase 2: latency at a fixed offered rate -------------------------------------------------------
        print(f"phase 2: {args.rate:g} events/s for {args.seconds:g} s (open loop)", flush=True)
        sink.clear()
        lat_emails = emails["lat"]
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
        cpu_per_event = {
            name: round(1000 * (used - cpu_before.get(name, 0.0)) / n_lat, 2)
            for name, used in cpu_usage(components).items()
        }
        print(
            "  CPU ms per event by process (summed over its children): "
            + ", ".join(f"{name} {ms:.1f}" for name, ms in cpu_per_event.items()),
            flush=True,
        )
        first_mail: dict[str, float] = {}
        for m in sink.messages:
            rcpt = m.rcpt_tos[0]
            if rcpt not in first_mail or m.received_at < first_mail[rcpt]:
                first_mail[rcpt] = m.received_at
        latencies = [
            first_mail[e] - call_started[e] for e in lat_emails if e in first_mail and e in call_started
        ]
        p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
        print(
            f"  {len(latencies)} events offered over {offered_seconds:.1f} s ({sum(c != 201 for c in codes2)} API errors): "
            f"API call → first email accepted p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms, mean {statistics.mean(latencies) * 1000:.0f} ms",
            flush=True,
        )
        hops = latency_breakdown(automation, lat_emails, call_started, call_ended, first_mail)
        print_breakdown(hops)
        results.update(
            latency_hops=hops,
            latency_cpu_ms_per_event=cpu_per_event,
            offered_rate=args.rate,
            offered_seconds=round(offered_seconds, 1),
            latency_events=len(latencies),
            latency_p50_ms=round(p50 * 1000),
            latency_p95_ms=round(p95 * 1000),
            latency_max_ms=round(max(latencies) * 1000),
        )
    finally:
        web.terminate()
        try:
            web.wait(timeout=5)
        except Exception:
            web.kill()
        web_log.close()
        workers.stop()
        sink.stop()

    first, last = results["per_size"][0], results["per_size"][-1]
    growth_time = last["walker_alone_ms_per_step"] / first["walker_alone_ms_per_step"]
    growth_rss = last["walker_alone_peak_rss_mib"] / first["walker_alone_peak_rss_mib"]
    rows = [
        # name, figure, baseline, target text, met, unit
        (
            "walker steps/s (walker alone, largest size)",
            results["steps_per_second"],
            BASELINE["steps_per_second"],
            f">= {TARGET_STEPS_PER_SECOND:.0f}",
            results["steps_per_second"] >= TARGET_STEPS_PER_SECOND,
        ),
        (
            "events API events/s",
            results["events_per_second"],
            BASELINE["events_per_second"],
            "(none here)",
            None,
        ),
        (
            "events API ÷ minimal DRF view (same run)",
            results["events_per_second"],
            results["baseline_requests_per_second"],
            f">= {TARGET_API_RATIO} ×",
            results["events_per_second"] >= TARGET_API_RATIO * results["baseline_requests_per_second"],
        ),
        (
            f"event → first email p50 ms at {args.rate:g}/s",
            results["latency_p50_ms"],
            BASELINE["p50_ms"],
            f"< {TARGET_P50_SECONDS * 1000:.0f}",
            results["latency_p50_ms"] < TARGET_P50_SECONDS * 1000,
        ),
        (
            f"event → first email p95 ms at {args.rate:g}/s",
            results["latency_p95_ms"],
            None,
            f"< {TARGET_P95_SECONDS * 1000:.0f}",
            results["latency_p95_ms"] < TARGET_P95_SECONDS * 1000,
        ),
        (
            f"time/step growth {first['size']}→{last['size']}",
            round(growth_time, 2),
            None,
            f"<= {TARGET_GROWTH}",
            growth_time <= TARGET_GROWTH,
        ),
        (
            f"peak RSS growth {first['size']}→{last['size']}",
            round(growth_rss, 2),
            None,
            f"<= {TARGET_GROWTH}",
            growth_rss <= TARGET_GROWTH,
        ),
    ]
    print("\nPer size (phase 1)")
    print(
        f"  {'size':>8} {'API path s':>10} {'steps/s':>8} {'RSS MiB':>8} | {'walker s':>9} {'steps/s':>8} "
        f"{'ms/step':>8} {'RSS MiB':>8} {'load':>5}"
    )
    for r in results["per_size"]:
        print(
            f"  {r['size']:>8} {r['walker_seconds']:>10.1f} {r['steps_per_second']:>8.1f} {r['peak_rss_mib']:>8.0f} | "
            f"{r['walker_alone_seconds']:>9.1f} {r['walker_alone_steps_per_second']:>8.1f} "
            f"{r['walker_alone_ms_per_step']:>8.2f} {r['walker_alone_peak_rss_mib']:>8.0f} {r['walker_alone_load']:>5.1f}"
        )
    print("\nSummary (baseline: issue 12's figures before the batched walker; ratio = figure / baseline)")
    print(f"  {'figure':<42} {'value':>10} {'baseline':>10} {'ratio':>7} {'target':>10}  result")
    table = []
    for name, value, baseline, target, met in rows:
        ratio = f"{value / baseline:.2f}" if baseline else "—"
        verdict = "—" if met is None else ("met" if met else "MISSED")
        print(
            f"  {name:<42} {value:>10} {baseline if baseline is not None else '—':>10} {ratio:>7} {target:>10}  {verdict}"
        )
        table.append({"figure": name, "value": value, "baseline": baseline, "target": target, "met": met})
    results.update(
        table=table,
        steps_target_met=rows[0][4],
        p50_target_met=rows[3][4],
        api_ratio_target_met=rows[2][4],
        cpus=os.cpu_count(),
        load_average_at_end=os.getloadavg(),
    )
    print(
        f"  machine: {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f} (other work included)"
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"  figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
