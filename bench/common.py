"""Helpers shared by the delivery benchmarks (`delivery_throughput.py`, `pool_pacing.py`).

- a fresh PostgreSQL database per run (dropped and re-created), Django set up against it with `DEBUG=0`;
- a loopback SMTP sink (aiosmtpd) in its own process, so the process being measured does not share a GIL
  with the server; it records `(time.time(), recipient)` per accepted message and answers `count` / `dump`
  on its stdin;
- real worker processes (`manage.py qcluster` per queue, `run_due_tasks`, the web tier under gunicorn) with the
  benchmark's environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PY = sys.executable
SECRET = "bench-secret-key-0123456789abcdef0123456789abcdef-delivery"


def recreate_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    print(server_line(server_settings(url)), flush=True)


SERVER_SETTINGS = ("autovacuum", "fsync", "synchronous_commit", "shared_buffers", "max_connections")


def server_settings(url: str) -> dict[str, str]:
    """The PostgreSQL server settings that change what a benchmark measures, as the server reports them."""
    import psycopg

    base, _, _ = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        return {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in SERVER_SETTINGS}


def server_line(found: dict[str, str]) -> str:
    """One line naming the server's settings, with a warning when autovacuum is off: production runs it
    (PostgreSQL's default, docs/deploy.md), and without it the queue tables' dead rows pile up, so figures past
    some 10,000 rows measure that pile as well (CI machines may turn it off in their configuration)."""
    line = "PostgreSQL: " + ", ".join(f"{k} {v}" for k, v in found.items())
    if found["autovacuum"] != "on":
        line += (
            "\n  WARNING: autovacuum is off on this server, unlike production; the figures include dead rows"
            " no vacuum removes. Turn it on: ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf();"
        )
    return line


def base_env(url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_Q"))}
    env.pop("REDIS_URL", None)
    env.pop("OWLAT_TESTING", None)
    env.update(
        {
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "owlat.settings",
            "DEBUG": "0",
            "SECRET_KEY": SECRET,
            "SITE_URL": "http://127.0.0.1:8765",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "WARNING",
        }
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def setup_django(url: str, **extra: str) -> None:
    os.environ.update(base_env(url, **extra))
    sys.path.insert(0, str(BASE_DIR))
    import django

    django.setup()


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


# --- SMTP sink process -----------------------------------------------------------------------------------

SINK_CODE = r"""
import sys, time, threading
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP

accepted = []
lock = threading.Lock()

class Handler:
    async def handle_DATA(self, server, session, envelope):
        now = time.time()
        with lock:
            for rcpt in envelope.rcpt_tos:
                accepted.append((now, rcpt))
        return "250 OK: queued"

port = int(sys.argv[1])
controller = Controller(Handler(), hostname="127.0.0.1", port=port, data_size_limit=50 * 1024 * 1024)
controller.start()
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.strip().split(" ", 1)
    if cmd[0] == "count":
        with lock:
            n = len(accepted)
            last = accepted[-1][0] if accepted else 0.0
            first = accepted[0][0] if accepted else 0.0
        print(f"{n} {first} {last}", flush=True)
    elif cmd[0] == "dump":
        with lock:
            rows = list(accepted)
        with open(cmd[1], "w") as fh:
            for ts, rcpt in rows:
                fh.write(f"{ts} {rcpt}\n")
        print("ok", flush=True)
    elif cmd[0] == "reset":
        with lock:
            accepted.clear()
        print("ok", flush=True)
    elif cmd[0] == "quit":
        break
controller.stop()
"""


class Sink:
    """A loopback SMTP relay in a process of its own that notes time and recipient of each accepted message.
    `own_session`: started in a session of its own, so the kernel schedules it as its own group (autogroup),
    as a relay on another machine would be, not sharing one with the process that started it."""

    def __init__(self, port: int, *, own_session: bool = False) -> None:
        self.port = port
        self.proc = subprocess.Popen(
            [PY, "-c", SINK_CODE, str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            start_new_session=own_session,
        )
        assert self.proc.stdout.readline().strip() == "ready"

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def _ask(self, command: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def count(self) -> tuple[int, float, float]:
        n, first, last = self._ask("count").split()
        return int(n), float(first), float(last)

    def reset(self) -> None:
        self._ask("reset")

    def dump(self) -> list[tuple[float, str]]:
        path = BASE_DIR / "var" / "bench" / f"sink-{self.port}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._ask(f"dump {path}")
        rows = []
        for line in path.read_text().splitlines():
            ts, rcpt = line.split(" ", 1)
            rows.append((float(ts), rcpt))
        return rows

    def wait_for(self, n: int, timeout: float) -> tuple[int, float, float]:
        deadline = time.monotonic() + timeout
        while True:
            count = self.count()
            if count[0] >= n:
                return count
            if time.monotonic() > deadline:
                raise TimeoutError(f"sink: {count[0]} of {n} messages after {timeout:.0f}s")
            time.sleep(0.05)

    def stop(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self._ask("quit")
        self.proc.wait(timeout=10)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- processes ---------------------------------------------------------------------------------------------


class Processes:
    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], **extra: str) -> None:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed when the process ends
        self.procs[name] = subprocess.Popen(
            [PY, str(BASE_DIR / "manage.py"), *args],
            cwd=BASE_DIR,
            env={**self.env, **extra},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start_web(self, name: str, port: int, *, workers: int = 2, threads: int = 4, **extra: str) -> None:
        """The web tier as deployed: gunicorn (threaded workers), never `runserver` (issue 12 item 7)."""
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed when the process ends
        self.procs[name] = subprocess.Popen(
            [PY, "-m", "gunicorn", "owlat.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers",
             str(workers), "--threads", str(threads), "--worker-class", "gthread", "--preload", "--log-level",
             "warning"],
            cwd=BASE_DIR,
            env={**self.env, **extra},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def check_alive(self) -> None:
        dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
        if dead:
            raise RuntimeError(f"benchmark process(es) died: {dead}; logs in {self.log_dir}")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def write_json(path: str, data: dict) -> None:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2))
