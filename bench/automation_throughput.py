#!/usr/bin/env python
"""Benchmark of the automations engine (issue 4; method per spec D-17).

Setup (not timed): a fresh PostgreSQL database (`BENCH_DATABASE_URL`, default
`postgres://postgres@127.0.0.1:5432/owlat_bench`, dropped and re-created), one organization with a default sender,
an active automation `event_received "bench"`: `0: email → 1: condition (plan equals "pro", both branches fall
through) → 2: email`, the contacts (created before timing), `--keys` API keys with `events:write` (so the per-key
limit of API-04 is not what is measured), real processes: the API (gunicorn, 2 workers × 4 threads), `qcluster`
for the default, transactional and campaign queues, `run_due_tasks`, and the loopback SMTP sink (aiosmtpd) in this
process (messages not parsed: the sink notes each one's envelope and time of acceptance). Pacing is off (`DELIVERY_TRANSACTIONAL_RATE=0`), `DEBUG=0`.

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
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
sys.path.insert(0, str(BASE_DIR / "bench"))

# The phases live in modules beside this script: automation_world (the organization, automation and contacts),
# automation_load (the processes, the HTTP clients, the baseline view), automation_phases (phase 1 and 1b),
# automation_latency (phase 2 and where its latency goes), automation_summary (targets, baseline and the tables).
from automation_latency import latency_phase  # noqa: E402
from automation_load import (  # noqa: E402
    BENCH_SETTINGS,
    Live,
    baseline_requests_per_second,
    post_event,
    start_processes,
    stop_processes,
)
from automation_phases import throughput_at_sizes, walker_alone_at_sizes  # noqa: E402
from automation_summary import summarize  # noqa: E402
from automation_world import build_world, setup_django  # noqa: E402
from common import recreate_database, server_settings  # noqa: E402
from measure import wait_for, wait_http  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench"


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

    logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd's per-command log

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
    # Envelope and time of acceptance only: parsing every message in this process's event loop capped the
    # mail the benchmark could see accepted at ~150-190/s (issue 12), whatever the transactional pool did.
    sink = SmtpSink(parse=False).start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_dir = BASE_DIR / "var" / "bench" / "logs"
    workers, web, web_log = start_processes(args, sink.url, port, log_dir)
    live = Live(args, base, keys, emails, automation, sink, workers, web)
    accepted = live.accepted
    results: dict = {
        "events": args.events,
        "sizes": sizes,
        "keys": args.keys,
        "clients": args.clients,
        "load_average_at_start": os.getloadavg(),
        "postgresql": server_settings(url),
    }
    try:
        wait_http(f"{base}/api/v1/health")

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

        # --- phase 1: throughput, at each size; phase 1b: the walker alone, at each size -------------------
        per_size = throughput_at_sizes(live, sizes)
        walker_alone_at_sizes(live, sizes, per_size)

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
        results.update(latency_phase(live, n_lat))
    finally:
        stop_processes(workers, web, web_log, sink)

    summarize(results, args)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"  figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
