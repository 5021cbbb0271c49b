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

Phase 2 — latency: at a fixed offered rate (`--rate`, 50 events/s) for `--seconds` (60 s), open loop, new
contacts; p50/p95/max from the moment the event's API call starts to its first email's SMTP acceptance.

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
from measure import peak_rss_mib, percentile, reset_peak_rss, tree_pids, wait_for, wait_http  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench"
TARGET_STEPS_PER_SECOND = 300.0
TARGET_P50_SECONDS = 1.0
TARGET_P95_SECONDS = 3.0
TARGET_GROWTH = 1.2  # time per step and peak RSS from the smallest to the largest size: within 20 %
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
        env=env,
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


def _terminate(signum, frame):  # SIGTERM → SystemExit, so `finally` stops the processes we started
    raise SystemExit(128 + signum)


def main() -> int:
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    print(f"database {url} (re-created)", flush=True)
    recreate_database(url)
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
            t0 = time.monotonic()
            with ThreadPoolExecutor(args.clients) as pool:
                out = list(
                    pool.map(lambda i, load=load: post_event(base, keys[i % len(keys)], load[i]), range(size))
                )
            t_api = max(o[2] for o in out) - t0
            bad = [o[0] for o in out if o[0] != 201]
            events_per_s = (size - len(bad)) / t_api
            print(
                f"  API accepted {size - len(bad)} events in {t_api:.1f} s → {events_per_s:.1f} events/s",
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

        def fire(i: int) -> None:
            email = lat_emails[i]
            code, start, _ = post_event(base, keys[i % len(keys)], email)
            with lock:
                call_started[email] = start
                codes2.append(code)

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
        results.update(
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
        p50_target_met=rows[2][4],
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
