#!/usr/bin/env python
"""In-process profile of the inbox agent pipeline (a profiling aid beside `bench/inbox_pipeline.py`, issue 10).

The same world as the benchmark (a fresh PostgreSQL database from `BENCH_DATABASE_URL`, one organization with the
`ai` flag on and the default agent configuration, the loopback chat-completions server of `testsupport.llm`
answering at once, the pipeline-start limits lifted), but no qcluster: the stored messages' `message_start` tasks
and every step task they enqueue run in this process (`testsupport.drain_queue`), so the CPU time per message is
steady even on a loaded machine. Printed: CPU ms per message of this process (the workers' share, plus the loopback
server's thread), of the PostgreSQL backend (`/proc/<pg_backend_pid()>/stat`), statements per message, and with
`--profile` where this process spends it (cProfile of the main thread, sorted by `--sort`).

Run: `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/owlat_bench_profile_inbox .venv/bin/python
bench/profile_inbox.py --messages 200 [--profile]`.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from bench.inbox_world import InboxWorld, start_inbox_bench  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_profile_inbox"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--sort", default="cumulative")
    p.add_argument("--lines", type=int, default=45)
    p.add_argument(
        "--cpu-timer",
        action="store_true",
        help="with --profile: time functions by this process's CPU time (time.process_time) instead of wall time, "
        "so waits on PostgreSQL and the model server do not count",
    )
    p.add_argument("--dump", help="with --profile: also write the raw profile to this file (pstats format)")
    p.add_argument("--sql", action="store_true", help="print the statements of one more message")
    return p.parse_args()


def backend_ticks() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main() -> int:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    llm, _ = start_inbox_bench(url)

    from django.db import connection, transaction

    from inbox.models import InboundMessage
    from owlat.jobs import enqueue
    from testsupport import drain_queue

    world = InboxWorld()
    set_agent, store = world.set_agent, world.store

    def run(ids: list[str]) -> None:
        set_agent(True)
        with transaction.atomic():
            for pk in ids:
                enqueue("inbox.tasks.message_start_task", pk, queue="inbox")
        # no due-task dispatch between tasks: the benchmark runs no dispatcher either
        drain_queue(max_tasks=100 * len(ids), queue="inbox", dispatch_due=False)
        set_agent(False)

    try:
        set_agent(False)
        run(store("warm", args.warmup))
        ids = store("msg", args.messages)
        profiler = None
        if args.profile:
            profiler = cProfile.Profile(time.process_time) if args.cpu_timer else cProfile.Profile()
        statements = [0]

        def count(execute, sql, params, many, context):
            statements[0] += 1
            return execute(sql, params, many, context)

        ticks0, cpu0 = backend_ticks(), time.process_time()
        with connection.execute_wrapper(count):
            if profiler:
                profiler.enable()
            run(ids)
            if profiler:
                profiler.disable()
        cpu = (time.process_time() - cpu0) * 1000 / len(ids)
        backend = (backend_ticks() - ticks0) * 1000 / os.sysconf("SC_CLK_TCK") / len(ids)
        if args.sql:
            seen: list[str] = []

            def show(execute, sql, params, many, context):
                seen.append(sql)
                return execute(sql, params, many, context)

            one = store("sql", 1)
            with connection.execute_wrapper(show):
                run(one)
            print(f"statements of one message ({len(seen)}):")
            for sql in seen:
                print("  " + " ".join(sql.split())[:220])
    finally:
        llm.stop()
    done = InboundMessage.objects.filter(pk__in=ids, processing_status="draft_ready").count()
    print(f"{done}/{len(ids)} messages draft_ready")
    print(
        f"CPU ms per message: this process {cpu:.1f} (workers' share and the loopback model server), ", end=""
    )
    print(
        f"PostgreSQL backend {backend:.1f}; statements per message {statements[0] / len(ids):.1f} (with drain_queue's two per task)"
    )
    if profiler:
        out = io.StringIO()
        if args.dump:
            profiler.dump_stats(args.dump)
        pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.lines)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
