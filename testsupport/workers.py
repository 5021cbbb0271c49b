"""Real worker processes (one qcluster per queue plus `run_due_tasks`) against the test database: the
`workers` fixture and its `worker_env` marker."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from testsupport.waiting import wait_until

BASE_DIR = Path(__file__).resolve().parent.parent


# ==========================================================================================================
# Real worker processes against the test database
# ==========================================================================================================


def spawn_manage(args: Sequence[str], env: dict[str, str], stdout: Any) -> subprocess.Popen:
    """`manage.py <args>` in its own session (a signal to the test's group does not reach it), output to
    `stdout` (a file or `subprocess.PIPE`), no stdin."""
    return subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        cwd=BASE_DIR,
        env=env,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


#: name -> (command args after manage.py, extra environment)
WORKER_PROCESSES: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": (["qcluster"], {}),
    "transactional": (["qcluster"], {"Q_CLUSTER_NAME": "transactional"}),
    "campaign": (["qcluster"], {"Q_CLUSTER_NAME": "campaign"}),
    "inbox": (["qcluster"], {"Q_CLUSTER_NAME": "inbox"}),
    "dispatcher": (["run_due_tasks", "--name", "dispatcher"], {}),
}
#: the same processes as `make run` starts them: each queue's cluster under its supervisor (`run_cluster`,
#: owlat/clusters.py), which restarts it when it dies or stalls
SUPERVISED_PROCESSES: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": (["run_cluster", "default"], {}),
    "transactional": (["run_cluster", "transactional"], {}),
    "campaign": (["run_cluster", "campaign"], {}),
    "inbox": (["run_cluster", "inbox"], {}),
    "dispatcher": (["run_due_tasks", "--name", "dispatcher"], {}),
}
#: heartbeat rows that prove a process works: the dispatcher beats itself at start and enqueues one
#: `heartbeat_task("queue:<name>")` per queue, which each queue's cluster runs.
_READY_BEATS = {
    "default": "queue:default",
    "transactional": "queue:transactional",
    "campaign": "queue:campaign",
    "inbox": "queue:inbox",
    "dispatcher": "dispatcher",
}


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, grandchildren, …), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def database_url_for_tests() -> str:
    """A DATABASE_URL for the database the test process uses now (the pytest test database)."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    engine = db["ENGINE"]
    if engine == "django.db.backends.sqlite3":
        name = str(db["NAME"])
        if name == ":memory:" or "mode=memory" in name:
            raise RuntimeError(
                "worker processes cannot share an in-memory SQLite test database; use PostgreSQL"
            )
        return f"sqlite:///{name}"
    user = quote(db.get("USER") or "", safe="")
    password = quote(db.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = db.get("HOST") or "127.0.0.1"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{quote(db['NAME'], safe='')}"


class WorkerSet:
    """The running worker processes of one test: `default`, `transactional`, `campaign` (qcluster each) and
    `dispatcher` (run_due_tasks). Each process runs in its own process group (qcluster forks children)."""

    def __init__(
        self,
        env: dict[str, str],
        log_dir: Path,
        processes: dict[str, tuple[list[str], dict[str, str]]] | None = None,
    ) -> None:
        self.env = env
        self.log_dir = log_dir
        self.processes = processes or WORKER_PROCESSES
        self.procs: dict[str, subprocess.Popen] = {}
        self._stopped: set[str] = set()  # stopped on purpose: not a failure
        self._logs: dict[str, Any] = {}

    def start(self, *names: str) -> None:
        """Start the named processes (all when none given) without waiting for them."""
        for name in names or tuple(self.processes):
            if name in self.procs and self.procs[name].poll() is None:
                continue
            args, extra = self.processes[name]
            self._stopped.discard(name)
            log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop()
            self._logs[name] = log
            self.procs[name] = spawn_manage(args, {**self.env, **extra}, log)

    def wait_ready(self, *names: str, since: dt.datetime, timeout: float = 60.0) -> None:
        """Wait until each named process proved it works (a heartbeat row newer than `since`)."""
        from owlat.models import WorkerHeartbeat

        names = names or tuple(self.processes)
        wanted = {_READY_BEATS[n] for n in names}

        def ready() -> bool:
            self._check_alive()
            seen = set(
                WorkerHeartbeat.objects.filter(name__in=wanted, beat_at__gte=since).values_list(
                    "name", flat=True
                )
            )
            return seen == wanted

        wait_until(ready, timeout, interval=0.05, message=lambda: "workers not ready\n" + self.logs_tail())

    def _check_alive(self) -> None:
        dead = {
            n: p.returncode for n, p in self.procs.items() if n not in self._stopped and p.poll() is not None
        }
        if dead:
            raise AssertionError(f"worker process(es) exited: {dead}\n{self.logs_tail()}")

    def stop(self, *names: str, sig: int = signal.SIGTERM, grace: float = 5.0) -> None:
        """Stop the named processes (all when none given): `sig` to each, then SIGKILL to its process group."""
        names = names or tuple(self.procs)
        self._stopped.update(names)
        # a supervised cluster runs in a session of its own: note the whole tree before signalling
        trees = {n: descendants(p.pid) for n, p in self.procs.items() if n in names and p.poll() is None}
        for name in names:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is None:
                # SIGTERM only the main process: qcluster's sentinel then stops its children in order (~1 s);
                # a SIGTERM to the whole group kills the children under it and the sentinel hangs
                with contextlib.suppress(ProcessLookupError):
                    if sig == signal.SIGKILL:
                        os.killpg(proc.pid, sig)
                    else:
                        os.kill(proc.pid, sig)
        deadline = time.monotonic() + grace
        for name in names:
            proc = self.procs.get(name)
            if proc is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            # children of qcluster may outlive their parent: always sweep the group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for pid in trees.get(name, []):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            log = self._logs.pop(name, None)
            if log is not None:
                log.close()

    def kill(self, *names: str) -> None:
        """Simulate a crash: SIGKILL the named processes at once."""
        self.stop(*names, sig=signal.SIGKILL, grace=0.0)

    def restart(self, *names: str, timeout: float = 30.0) -> None:
        from django.utils import timezone

        names = names or tuple(self.processes)
        self.stop(*names)
        since = timezone.now()
        self.start(*names)
        # a restarted queue only beats when the dispatcher enqueues its heartbeat: restart that too
        if "dispatcher" not in names:
            self.stop("dispatcher")
            self.start("dispatcher")
            names = (*names, "dispatcher")
        self.wait_ready(*names, since=since, timeout=timeout)

    def wait_until(self, predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05) -> Any:
        """Like `wait_until`, but fails early if a worker died and shows the worker logs on timeout."""

        def check() -> Any:
            self._check_alive()
            return predicate()

        return wait_until(check, timeout, interval=interval, message=lambda: "\n" + self.logs_tail())

    def log(self, name: str) -> str:
        path = self.log_dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs_tail(self, lines: int = 30) -> str:
        out = []
        for name in self.processes:
            text = self.log(name)
            if text:
                tail = "\n".join(text.splitlines()[-lines:])
                out.append(f"--- {name} ---\n{tail}")
        return "\n".join(out)


def worker_environment(overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """The environment given to worker processes: this test's database, mail settings and fast polls."""
    from django.conf import settings

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_Q"))}
    env.update(
        {
            "DATABASE_URL": database_url_for_tests(),
            "OWLAT_TESTING": "1",
            "DEBUG": "1",
            "DJANGO_SETTINGS_MODULE": "owlat.settings",
            "SECRET_KEY": settings.SECRET_KEY,
            "SITE_URL": settings.SITE_URL,
            "EMAIL_PROVIDER": settings.EMAIL_PROVIDER or "",
            "EMAIL_URL": settings.EMAIL_URL or "",
            "DNS_NAMESERVERS": ",".join(settings.DNS_NAMESERVERS),
            "DELIVERY_TRANSACTIONAL_RATE": str(settings.DELIVERY_TRANSACTIONAL_RATE),
            "DELIVERY_CAMPAIGN_RATE": str(settings.DELIVERY_CAMPAIGN_RATE),
            "POSTHOG_API_KEY": settings.POSTHOG_API_KEY or "",
            "POSTHOG_HOST": settings.POSTHOG_HOST,
            "Q_POLL": "0.02",
            "DUE_TASK_POLL_SECONDS": "0.05",
            "Q_WORKERS": "2",
            "Q_TRANSACTIONAL_WORKERS": "1",
            "Q_CAMPAIGN_WORKERS": "1",
            "Q_INBOX_WORKERS": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.pop("REDIS_URL", None)
    env.update({k: str(v) for k, v in (overrides or {}).items()})
    return env


@pytest.fixture
def worker_env() -> dict[str, Any]:
    """Extra environment for the `workers` processes. Override it in a test module or class when the values
    come from other fixtures, e.g. `def worker_env(http_receiver): return {"POSTHOG_HOST": http_receiver.url}`.
    """
    return {}


@pytest.fixture
def workers(request, transactional_db, settings, tmp_path, worker_env):
    """Real worker processes for a `@pytest.mark.django_db(transaction=True)` test.

    Starts `qcluster` for the default, `transactional` and `campaign` queues and `run_due_tasks`, all on the
    test database, and waits until each has run a heartbeat. Pacing is lifted (rates 0) in the workers and in
    this process; `@pytest.mark.worker_env(DELIVERY_CAMPAIGN_RATE=5, ...)` or an overridden `worker_env`
    fixture sets any environment variable of the workers (DELIVERY_*_RATE are mirrored into `settings`). `smtp_sink` and `http_receiver` are set up
    before the workers when the test uses them, so EMAIL_URL reaches the workers.
    """
    yield from _worker_set(request, settings, tmp_path, worker_env, WORKER_PROCESSES)


@pytest.fixture
def supervised_workers(request, transactional_db, settings, tmp_path, worker_env):
    """Like `workers`, but each queue's cluster runs under its supervisor (`manage.py run_cluster`), as
    `make run` starts it: killed or stalled clusters are restarted by the watchdog, not by the test."""
    yield from _worker_set(request, settings, tmp_path, worker_env, SUPERVISED_PROCESSES)


def _worker_set(request, settings, tmp_path, worker_env, processes):
    from django.utils import timezone

    if "smtp_sink" in request.fixturenames:
        request.getfixturevalue("smtp_sink")
    overrides: dict[str, Any] = dict(worker_env)
    for marker in reversed(list(request.node.iter_markers("worker_env"))):
        overrides.update(marker.kwargs)
    settings.DELIVERY_TRANSACTIONAL_RATE = float(overrides.get("DELIVERY_TRANSACTIONAL_RATE", 0))
    settings.DELIVERY_CAMPAIGN_RATE = float(overrides.get("DELIVERY_CAMPAIGN_RATE", 0))
    env = worker_environment(overrides)
    log_dir = tmp_path / "worker-logs"
    log_dir.mkdir()
    ws = WorkerSet(env, log_dir, processes)
    since = timezone.now() - dt.timedelta(milliseconds=5)
    try:
        ws.start()
        ws.wait_ready(since=since)
        yield ws
    finally:
        ws.stop()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "worker_env(**env): environment variables for the processes of the `workers` fixture"
    )
