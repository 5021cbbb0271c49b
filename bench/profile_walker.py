#!/usr/bin/env python
"""In-process profile of the batched walker (issue 12: the default cluster's CPU per step and PostgreSQL's).

No cluster, no SMTP: on the world `automation_throughput.py` builds (a fresh PostgreSQL database from
`BENCH_DATABASE_URL`, an active `event_received "bench"` automation `email → condition → email`, contacts with a
`plan` property), `--runs` runs are opened in one transaction (as `walker_alone_at_sizes` in
`automation_phases.py` does), then `automations.walker_batch.walk` is called in this process in a loop until
nothing is due. The walk only queues the email send rows (and their transactional pool jobs as broker rows);
nothing is delivered (`--hop`: `walk_hop`, the walk task's loop, instead of `walk`). With `--stream RATE` the
measured runs are not opened at once: a child process opens them at RATE events per second, each event its own
transaction as the events API does, while this process walks them with `walk_hop` as the walk task does (its
pauses included), so the batches are as large as that stream makes them; printed also: the batch sizes and the
send rows per transactional job they queued. A warm-up pass of `--warmup` runs goes first. Printed per step run executed: CPU
milliseconds of this process (`time.process_time`) and of its PostgreSQL backend (`/proc/<backend pid>/stat`,
10 ms ticks: quote it over thousands of steps) and statements (BEGIN/COMMIT/SAVEPOINT included); with `--sql` the
statements of one full batch; with `--profile` the functions where the walk spends its time (cProfile, CPU
time, sorted by `--sort`). Load-insensitive: CPU time and counts, not wall time.

Run: `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/owlat_bench_walker .venv/bin/python
bench/profile_walker.py --runs 2000 [--sql] [--profile]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
sys.path.insert(0, str(BASE_DIR / "bench"))

from automation_world import build_world, setup_django  # noqa: E402
from common import recreate_database  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_walker"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=2000, help="runs opened for the measured walk (3 steps each)")
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument(
        "--limit", type=int, default=0, help="step runs per batch (default: the walker's WALK_BATCH)"
    )
    p.add_argument(
        "--hop", action="store_true", help="call the walk task's walk_hop (batches walked on within one task)"
    )
    p.add_argument(
        "--stream",
        type=float,
        default=0,
        help="open the measured runs at this many events/s from a child process while walk_hop walks them",
    )
    p.add_argument("--sql", action="store_true", help="print the statements of one full batch")
    p.add_argument("--profile", action="store_true", help="cProfile a separate pass of --runs runs")
    p.add_argument("--sort", default="tottime", help="cProfile sort key (tottime, cumulative)")
    p.add_argument("--top", type=int, default=40)
    return p.parse_args()


def _backend_cpu_ms(pid: int) -> float:
    """utime + stime of a PostgreSQL backend (same machine), in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return 1000 * (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["EMAIL_PROVIDER"] = "smtp"  # configured (AUT-31 step 6); nothing is delivered here
    os.environ["EMAIL_URL"] = "smtp://127.0.0.1:2525"
    os.environ["DELIVERY_TRANSACTIONAL_RATE"] = "0"
    print(f"database {url} (re-created)", flush=True)
    recreate_database(url)
    setup_django(url)

    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from django_q.models import OrmQ

    from automations.models import AutomationRun, AutomationStepRun
    from automations.triggers import automation_fanout
    from automations.walker_batch import WALK_BATCH, walk, walk_hop
    from delivery.models import TransactionalSend
    from owlat.models import Contact
    from owlat.registry import TriggerEvent

    limit = args.limit or WALK_BATCH
    world = build_world(1, {"warm": args.warmup, "load": args.runs, "prof": args.runs, "sql": WALK_BATCH})
    automation = world["automation"]
    org_id = str(automation.organization_id)

    def open_runs(label: str) -> None:
        ids = Contact.objects.filter(email__in=world["emails"][label]).values_list("pk", flat=True)
        with transaction.atomic():
            for contact_id in ids:
                automation_fanout(
                    TriggerEvent("event_received", org_id, str(contact_id), {"eventName": "bench"})
                )

    stats = Counter()

    def counting(execute, sql, params, many, context):
        stats["statements"] += 1
        return execute(sql, params, many, context)

    def walk_all() -> int:
        batches = 0
        if args.hop:
            while (summary := walk_hop(limit=limit)) != "nothing due":
                batches += sum(1 for part in summary.split("; ") if part != "nothing due")
            return batches
        while walk(limit=limit) != "nothing due":
            batches += 1
        return batches

    def stream_runs(label: str, rate: float) -> Any:
        """A child process opening the runs of `label` at `rate` events/s, one transaction each."""
        import multiprocessing

        from django.db import connections

        connections.close_all()

        def feed() -> None:
            ids = list(Contact.objects.filter(email__in=world["emails"][label]).values_list("pk", flat=True))
            start = time.monotonic()
            for i, contact_id in enumerate(ids):
                delay = start + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                with transaction.atomic():
                    automation_fanout(
                        TriggerEvent("event_received", org_id, str(contact_id), {"eventName": "bench"})
                    )
            connections.close_all()

        child = multiprocessing.get_context("fork").Process(target=feed)
        child.start()
        return child

    sizes: list[int] = []

    def walk_stream(child: Any) -> int:
        batches = 0
        while True:
            alive = child.is_alive()
            summary = walk_hop(limit=limit)
            for part in summary.split("; "):
                if part != "nothing due":
                    batches += 1
                    sizes.append(int(part.split(" ", 1)[0]))
            if not alive and summary == "nothing due":
                return batches
            if summary == "nothing due":
                time.sleep(0.01)  # the wake-up a cluster would wait for

    open_runs("warm")
    walk_all()

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    if not args.stream:
        open_runs("load")
    done_before = AutomationStepRun.objects.filter(status="completed").count()
    sends_before = TransactionalSend.objects.count()
    wakes_before = OrmQ.objects.filter(key="default").count()
    jobs_before = OrmQ.objects.filter(key="transactional").count()
    stats.clear()
    if args.stream:
        child = stream_runs("load", args.stream)
        with connection.cursor() as cursor:  # the connection closed for the fork: its new backend
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
    pg0 = _backend_cpu_ms(backend)
    t0 = time.process_time()
    with connection.execute_wrapper(counting):
        batches = walk_stream(child) if args.stream else walk_all()
    cpu = 1000 * (time.process_time() - t0)
    pg = _backend_cpu_ms(backend) - pg0
    if args.stream:
        child.join()
    steps = AutomationStepRun.objects.filter(status="completed").count() - done_before
    sends = TransactionalSend.objects.count() - sends_before
    running = AutomationRun.objects.filter(status="running").count()
    wakes = OrmQ.objects.filter(key="default").count() - wakes_before
    print(
        f"{args.runs} runs: {steps} steps in {batches} batches of up to {limit}, {sends} send rows queued, "
        f"{wakes} walk tasks enqueued (django-q2 hops), {running} runs still running; load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"per step: walker CPU {cpu / steps:.3f} ms, PostgreSQL backend CPU {pg / steps:.3f} ms, "
        f"{stats['statements'] / steps:.3f} statements ({stats['statements'] / batches:.1f} per batch)"
    )

    if args.stream:
        jobs = OrmQ.objects.filter(key="transactional").count() - jobs_before
        ordered = sorted(sizes)
        print(
            f"stream {args.stream:g} events/s: batch sizes p10 {ordered[len(ordered) // 10]}, median "
            f"{ordered[len(ordered) // 2]}, p90 {ordered[9 * len(ordered) // 10]}, mean {sum(sizes) / len(sizes):.1f}; "
            f"{jobs} transactional jobs, {sends / max(jobs, 1):.1f} send rows per job"
        )

    if args.sql:
        open_runs("sql")
        with CaptureQueriesContext(connection) as ctx:
            summary = walk(limit=limit)
        print(f"statements of one batch ({summary}): {len(ctx.captured_queries)}")
        for q in ctx.captured_queries:
            print("  ", " ".join(q["sql"].split())[:240])
        walk_all()

    if args.profile:
        import cProfile
        import pstats

        open_runs("prof")
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        walk_all()
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
