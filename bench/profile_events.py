#!/usr/bin/env python
"""In-process profile of `POST /api/v1/events` against the minimal DRF view of `bench/baseline` (issue 12).

No gunicorn, no workers, no HTTP client: the WSGI application is called in a loop in this process on the world
`automation_throughput.py` builds (a fresh PostgreSQL database from `BENCH_DATABASE_URL`, one organization, an
active `event_received "bench"` automation, API keys with `events:write`, existing contacts), so the CPU time of
one request is the web tier's alone and steady even on a loaded machine. Printed: CPU milliseconds per request
(`time.process_time`, this process only) for the events API and the baseline view, their ratio, the CPU of the
PostgreSQL backend serving this process's connection per request (`/proc/<backend pid>/stat`, 10 ms ticks: summed
over all rounds, quote it over thousands of requests), the statements one events request runs, and with `--profile` the functions where
the events requests spend their time (cProfile, sorted by `--sort`).

Run: `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/owlat_bench_profile .venv/bin/python
bench/profile_events.py --requests 2000 [--profile] [--sql]`.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
sys.path.insert(0, str(BASE_DIR / "bench"))

from automation_world import build_world, setup_django  # noqa: E402
from common import recreate_database  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_profile"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=2000, help="measured requests of each kind")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument(
        "--rounds", type=int, default=10, help="interleaved rounds of baseline and events requests"
    )
    p.add_argument("--keys", type=int, default=100)
    p.add_argument("--profile", action="store_true", help="cProfile the events requests (a separate pass)")
    p.add_argument("--sort", default="tottime", help="cProfile sort key (tottime, cumulative)")
    p.add_argument("--top", type=int, default=45)
    p.add_argument("--sql", action="store_true", help="print the statements of one events request")
    p.add_argument("--dump", default="", help="also write the cProfile stats to this file (pstats format)")
    return p.parse_args()


def _backend_cpu_ms(pid: int) -> float:
    """utime + stime of a PostgreSQL backend (same machine), in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return 1000 * (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _environ(path: str, key: str, body: bytes) -> dict:
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


def _body(email: str) -> bytes:
    return json.dumps({"email": email, "eventName": "bench", "eventProperties": {"source": "bench"}}).encode()


def main() -> int:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.baseline.settings"
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    print(f"database {url} (re-created)", flush=True)
    recreate_database(url)
    setup_django(url)

    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.baseline.urls import BASELINE_PATH

    n = args.requests
    world = build_world(args.keys, {"warm": args.warmup, "load": n, "prof": n, "sql": 1})
    keys, emails = world["keys"], world["emails"]
    app = WSGIHandler()
    statuses: list[str] = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    def call(path: str, i: int, email: str) -> None:
        for _chunk in app(_environ(path, keys[i % len(keys)], _body(email)), start_response):
            pass
        status = statuses.pop()
        if not status.startswith("201"):
            raise SystemExit(f"{path}: {status}")

    for i in range(args.warmup):
        call("/api/v1/events", i, emails["warm"][i])
        call("/" + BASELINE_PATH, i, "w@example.com")
    # interleaved rounds, medians: on a shared machine the CPU time of a request moves with the load (caches,
    # sibling hyperthreads); a round of each kind back to back sees about the same load
    rounds = max(1, args.rounds)
    size = max(1, n // rounds)
    base_ms, event_ms = [], []
    pg_ms = {"base": 0.0, "events": 0.0}  # the backend's CPU, summed over the rounds (10 ms ticks)

    def backend_pid() -> (
        int
    ):  # the connection is kept (CONN_MAX_AGE); asked again each round in case it was not
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]

    for r in range(rounds):
        pid = backend_pid()
        pg0, t0 = _backend_cpu_ms(pid), time.process_time()
        for i in range(r * size, (r + 1) * size):
            call("/" + BASELINE_PATH, i, f"b{i}@example.com")
        base_ms.append(1000 * (time.process_time() - t0) / size)
        pg1, t0 = _backend_cpu_ms(pid), time.process_time()
        for i in range(r * size, (r + 1) * size):
            call("/api/v1/events", i, emails["load"][i])
        event_ms.append(1000 * (time.process_time() - t0) / size)
        pg_ms["base"] += pg1 - pg0
        pg_ms["events"] += _backend_cpu_ms(pid) - pg1
        if backend_pid() != pid:
            raise SystemExit("the connection's PostgreSQL backend changed during a round")
    baseline, events = statistics.median(base_ms), statistics.median(event_ms)
    ratio = statistics.median(b / e for b, e in zip(base_ms, event_ms, strict=True))
    print(
        f"CPU ms per request (this process, {n} requests each in {rounds} interleaved rounds, medians; "
        f"load {os.getloadavg()[0]:.1f}):"
    )
    print(f"  baseline view {baseline:.2f}   events API {events:.2f}   ratio {ratio:.2f}")
    measured = rounds * size
    print(
        f"PostgreSQL backend CPU ms per request (summed over the rounds): baseline view "
        f"{pg_ms['base'] / measured:.2f}   events API {pg_ms['events'] / measured:.2f}"
    )

    with CaptureQueriesContext(connection) as ctx:
        call("/api/v1/events", 0, emails["sql"][0])
    print(f"statements per events request: {len(ctx.captured_queries)}")
    if args.sql:
        for q in ctx.captured_queries:
            print("  ", q["sql"][:300])
        # owlat.sql.prepared_cursor's statements on this connection: how often PostgreSQL planned them again
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT generic_plans, custom_plans, statement FROM pg_prepared_statements WHERE NOT from_sql"
            )
            prepared = cursor.fetchall()
        print(
            f"prepared statements on the connection: {len(prepared)} (generic plans, custom plans, statement)"
        )
        for generic, custom, statement in prepared:
            print(f"   {generic:6d} {custom:6d}  {' '.join(statement.split())[:120]}")

    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile(time.process_time)  # CPU time, not time spent waiting for PostgreSQL
        profiler.enable()
        for i in range(n):
            call("/api/v1/events", i, emails["prof"][i])
        profiler.disable()
        if args.dump:
            profiler.dump_stats(args.dump)
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
