"""The live system `automation_throughput.py` drives, and its load: the worker processes and the web tier
(gunicorn, with the bench-only baseline view), the HTTP clients posting events, and the baseline's
requests/second (a minimal DRF view inserting one row, same gunicorn, clients and request count)."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure import cpu_seconds, tree_pids

BASE_DIR = Path(__file__).resolve().parent.parent
# The benchmark's processes run with the project's settings plus the baseline view (bench-only, bench/baseline).
BENCH_SETTINGS = "bench.baseline.settings"


@dataclass
class Live:
    """What the phases share: the arguments, the API's base URL and keys, the contacts' emails per batch, the
    automation, the SMTP sink and the processes."""

    args: argparse.Namespace
    base: str
    keys: list[str]
    emails: dict[str, list[str]]
    automation: Any
    sink: Any
    workers: Any
    web: Any

    def accepted(self) -> int:
        return len(self.sink.messages)

    @property
    def roots(self) -> list[int]:
        return [proc.pid for proc in self.workers.procs.values()] + [self.web.pid]


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


def stop_processes(workers, web, web_log, sink) -> None:
    web.terminate()
    try:
        web.wait(timeout=5)
    except Exception:
        web.kill()
    web_log.close()
    workers.stop()
    sink.stop()


# --- load ----------------------------------------------------------------------------------------------------

_local = threading.local()


def _session():
    import requests

    s = getattr(_local, "session", None)
    if s is None:
        s = requests.Session()
        _local.session = s
    return s


def _post(url: str, key: str, email: str) -> tuple[int, float, float]:
    start = time.monotonic()
    r = _session().post(
        url,
        data=json.dumps({"email": email, "eventName": "bench", "eventProperties": {"source": "bench"}}),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=60,
    )
    return r.status_code, start, time.monotonic()


def post_event(base: str, key: str, email: str) -> tuple[int, float, float]:
    return _post(f"{base}/api/v1/events", key, email)


def post_baseline(base: str, key: str, email: str) -> tuple[int, float, float]:
    """The same request to the minimal DRF view (one row inserted): the events API's baseline."""
    from bench.baseline.urls import BASELINE_PATH

    return _post(f"{base}/{BASELINE_PATH}", key, email)


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
