"""Test support: a loopback SMTP sink with fault injection, real worker processes, a recording HTTP server,
and an in-process runner for queued django-q2 tasks.

Registered as a pytest plugin by the root `conftest.py` (`pytest_plugins = ["owlat.testing"]`), so the fixtures
`smtp_sink`, `workers` and `http_receiver` are available everywhere; `drain_queue()` and `queued_tasks()` are
plain functions (`from owlat.testing import drain_queue`).

Nothing here is imported by production code. Django models are imported lazily, inside functions, because
pytest loads this plugin before Django is set up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import email
import email.policy
import gzip
import json
import os
import pydoc
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent

__all__ = [
    "DrainedTask",
    "HttpReceiver",
    "QueuedTask",
    "ReceivedMessage",
    "RecordedRequest",
    "Reply",
    "SmtpAttempt",
    "SmtpSink",
    "WorkerSet",
    "drain_queue",
    "free_port",
    "http_receiver",
    "queued_tasks",
    "smtp_sink",
    "wait_until",
    "workers",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(
    predicate: Callable[[], Any],
    timeout: float = 10.0,
    *,
    interval: float = 0.05,
    message: str | Callable[[], str] = "",
) -> Any:
    """Call `predicate` until it returns something truthy (returned) or `timeout` seconds pass (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = message() if callable(message) else message
            raise AssertionError(
                f"condition not met within {timeout:.1f}s" + (f": {detail}" if detail else "")
            )
        time.sleep(interval)


# ==========================================================================================================
# SMTP sink (aiosmtpd) with fault injection
# ==========================================================================================================

#: Reactions understood by `SmtpSink.reply_script` / `SmtpSink.script_for()` (one is consumed per message,
#: i.e. per SMTP transaction):
#:   "ok"               accept (250) — also what happens when the script is empty
#:   "451"              accept RCPT, answer `451 4.7.1 Try again later` at the end of DATA
#:   "550"              reject every RCPT with `550 5.1.1 No such user`
#:   "drop_after_data"  read the whole DATA body, then close the connection without any reply (D-08
#:                      AMBIGUOUS_TIMEOUT: the client sees a disconnect, not a reply)
#:   "drop_before_data" close the connection at RCPT, before DATA (a connection error before the end of DATA)
#:   "data:<reply>"     answer `<reply>` at the end of DATA, e.g. "data:552 5.3.4 Message too big"
#:   "rcpt:<reply>"     answer `<reply>` to every RCPT, e.g. "rcpt:452 4.5.3 Too many recipients"
#:   "delay:<seconds>"  wait that long at the end of DATA, then accept (for client timeouts)
SMTP_REACTIONS = ("ok", "451", "550", "drop_after_data", "drop_before_data")
_DATA_451 = "451 4.7.1 Try again later"
_RCPT_550 = "550 5.1.1 No such user"


class ReceivedMessage(EmailMessage):
    """A message the sink accepted: a parsed `EmailMessage` (headers, `get_body()`, ...) plus the envelope.

    Extra attributes: `mail_from` (envelope sender), `rcpt_tos` (envelope recipients), `raw` (bytes as received),
    `received_at` (monotonic time).
    """

    mail_from: str = ""
    rcpt_tos: list[str]
    raw: bytes = b""
    received_at: float = 0.0

    def text(self) -> str:
        """The text/plain body (or the only body) as a string, '' if there is none."""
        part = self.get_body(preferencelist=("plain",))
        return part.get_content() if part is not None else ""

    def html(self) -> str:
        part = self.get_body(preferencelist=("html",))
        return part.get_content() if part is not None else ""


def parse_message(raw: bytes) -> ReceivedMessage:
    return email.message_from_bytes(raw, _class=ReceivedMessage, policy=email.policy.default)  # type: ignore[return-value]


@dataclasses.dataclass
class SmtpAttempt:
    """One SMTP transaction the sink saw, whatever its outcome (accepted or not)."""

    reaction: str
    mail_from: str
    rcpt_tos: list[str]
    raw: bytes | None  # None when the transaction ended before DATA
    outcome: (
        str  # "accepted" | "rejected_rcpt" | "rejected_data" | "dropped_after_data" | "dropped_before_data"
    )


class _SinkHandler:
    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        envelope.owlat_reaction = None  # decided at the first RCPT (per-recipient scripts need the address)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        reaction = getattr(envelope, "owlat_reaction", None)
        if reaction is None:
            reaction = self.sink._next_reaction(address)
            envelope.owlat_reaction = reaction
        if reaction == "550" or reaction.startswith("rcpt:"):
            reply = _RCPT_550 if reaction == "550" else reaction[len("rcpt:") :]
            self.sink._record(SmtpAttempt(reaction, envelope.mail_from, [address], None, "rejected_rcpt"))
            return reply
        if reaction == "drop_before_data":
            self.sink._record(
                SmtpAttempt(
                    reaction, envelope.mail_from, [*envelope.rcpt_tos, address], None, "dropped_before_data"
                )
            )
            await _drop(server)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        reaction = getattr(envelope, "owlat_reaction", None) or "ok"
        raw = envelope.original_content or b""
        rcpts = list(envelope.rcpt_tos)
        if reaction == "drop_after_data":
            self.sink._record(SmtpAttempt(reaction, envelope.mail_from, rcpts, raw, "dropped_after_data"))
            await _drop(server)
        if reaction == "451" or reaction.startswith("data:"):
            self.sink._record(SmtpAttempt(reaction, envelope.mail_from, rcpts, raw, "rejected_data"))
            return _DATA_451 if reaction == "451" else reaction[len("data:") :]
        if reaction.startswith("delay:"):
            await asyncio.sleep(float(reaction[len("delay:") :]))
        self.sink._accept(envelope.mail_from, rcpts, raw, reaction)
        return "250 OK: queued"


async def _drop(server) -> None:
    """Close the client connection without replying; aiosmtpd cancels the session coroutine (we never return)."""
    server.transport.abort()
    while True:  # connection_lost() cancels this coroutine on the next loop iteration
        await asyncio.sleep(0.01)


class SmtpSink:
    """A real SMTP server on 127.0.0.1 (aiosmtpd `Controller`) that records what it receives.

    - `messages`: accepted messages (`ReceivedMessage`: parsed EmailMessage + `mail_from`, `rcpt_tos`, `raw`)
    - `attempts`: every transaction (`SmtpAttempt`), including rejected and dropped ones
    - `reply_script`: list of reactions consumed one per message (see `SMTP_REACTIONS`); empty = accept
    - `script_for(rcpt, reactions)`: reactions for transactions whose first recipient is `rcpt`; they take
      precedence over `reply_script` (useful when send order is not deterministic)
    - `wait_for(n, timeout)`, `count_for(rcpt)`, `messages_for(rcpt)`, `clear()`
    """

    def __init__(self, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.host = host
        self.port = port or free_port()
        self.messages: list[ReceivedMessage] = []
        self.attempts: list[SmtpAttempt] = []
        self.reply_script: list[str] = []
        self._per_rcpt: dict[str, list[str]] = {}
        self._cond = threading.Condition()
        self._controller = None

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> SmtpSink:
        from aiosmtpd.controller import Controller

        self._controller = Controller(
            _SinkHandler(self),
            hostname=self.host,
            port=self.port,
            ready_timeout=10.0,
            auth_require_tls=False,
            authenticator=_accept_any_login,
            data_size_limit=50 * 1024 * 1024,
        )
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    @property
    def url(self) -> str:
        """The `EMAIL_URL` (D-09) pointing at this sink."""
        return f"smtp://{self.host}:{self.port}"

    # -- scripting ----------------------------------------------------------------------------------------
    def script_for(self, rcpt: str, reactions: Iterable[str]) -> None:
        with self._cond:
            self._per_rcpt.setdefault(rcpt.lower(), []).extend(_check_reactions(reactions))

    def _next_reaction(self, first_rcpt: str) -> str:
        with self._cond:
            queue = self._per_rcpt.get(first_rcpt.lower())
            if queue:
                return queue.pop(0)
            if self.reply_script:
                reaction = self.reply_script.pop(0)
                _check_reactions([reaction])
                return reaction
            return "ok"

    # -- recording ----------------------------------------------------------------------------------------
    def _record(self, attempt: SmtpAttempt) -> None:
        with self._cond:
            self.attempts.append(attempt)
            self._cond.notify_all()

    def _accept(self, mail_from: str, rcpts: list[str], raw: bytes, reaction: str) -> None:
        msg = parse_message(raw)
        msg.mail_from = mail_from
        msg.rcpt_tos = rcpts
        msg.raw = raw
        msg.received_at = time.monotonic()
        with self._cond:
            self.messages.append(msg)
            self.attempts.append(SmtpAttempt(reaction, mail_from, rcpts, raw, "accepted"))
            self._cond.notify_all()

    # -- queries ------------------------------------------------------------------------------------------
    def wait_for(self, n: int, timeout: float = 10.0) -> list[ReceivedMessage]:
        """Block until at least `n` messages were accepted; returns `messages`. AssertionError on timeout."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.messages) >= n, timeout=timeout)
            if not ok:
                raise AssertionError(
                    f"SMTP sink: expected {n} message(s) within {timeout:.1f}s, got {len(self.messages)} "
                    f"(attempts: {[(a.outcome, a.rcpt_tos) for a in self.attempts]})"
                )
            return list(self.messages)

    def wait_for_attempts(self, n: int, timeout: float = 10.0) -> list[SmtpAttempt]:
        """Block until at least `n` transactions (of any outcome) were seen."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.attempts) >= n, timeout=timeout)
            if not ok:
                raise AssertionError(f"SMTP sink: expected {n} attempt(s), got {len(self.attempts)}")
            return list(self.attempts)

    def messages_for(self, rcpt: str) -> list[ReceivedMessage]:
        rcpt = rcpt.lower()
        with self._cond:
            return [m for m in self.messages if rcpt in (r.lower() for r in m.rcpt_tos)]

    def count_for(self, rcpt: str) -> int:
        """How many accepted messages had `rcpt` among their envelope recipients."""
        return len(self.messages_for(rcpt))

    def clear(self) -> None:
        with self._cond:
            self.messages.clear()
            self.attempts.clear()
            self.reply_script.clear()
            self._per_rcpt.clear()


def _accept_any_login(server, session, envelope, mechanism, auth_data):
    from aiosmtpd.smtp import AuthResult

    return AuthResult(success=True)


def _check_reactions(reactions: Iterable[str]) -> list[str]:
    out = list(reactions)
    for r in out:
        if r in SMTP_REACTIONS or r.startswith(("data:", "rcpt:", "delay:")):
            continue
        raise ValueError(f"unknown SMTP sink reaction {r!r}; known: {SMTP_REACTIONS} or data:/rcpt:/delay:")
    return out


@pytest.fixture
def smtp_sink(settings):
    """A loopback SMTP server; sets `EMAIL_PROVIDER="smtp"` and `EMAIL_URL` (also passed to `workers`)."""
    sink = SmtpSink().start()
    settings.EMAIL_PROVIDER = "smtp"
    settings.EMAIL_URL = sink.url
    try:
        yield sink
    finally:
        sink.stop()


# ==========================================================================================================
# Real worker processes against the test database
# ==========================================================================================================

#: name -> (command args after manage.py, extra environment)
WORKER_PROCESSES: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": (["qcluster"], {}),
    "transactional": (["qcluster"], {"Q_CLUSTER_NAME": "transactional"}),
    "campaign": (["qcluster"], {"Q_CLUSTER_NAME": "campaign"}),
    "dispatcher": (["run_due_tasks", "--name", "dispatcher"], {}),
}
#: heartbeat rows that prove a process works: the dispatcher beats itself at start and enqueues one
#: `heartbeat_task("queue:<name>")` per queue, which each queue's cluster runs.
_READY_BEATS = {
    "default": "queue:default",
    "transactional": "queue:transactional",
    "campaign": "queue:campaign",
    "dispatcher": "dispatcher",
}


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

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen] = {}
        self._stopped: set[str] = set()  # stopped on purpose: not a failure
        self._logs: dict[str, Any] = {}

    def start(self, *names: str) -> None:
        """Start the named processes (all when none given) without waiting for them."""
        for name in names or tuple(WORKER_PROCESSES):
            if name in self.procs and self.procs[name].poll() is None:
                continue
            args, extra = WORKER_PROCESSES[name]
            self._stopped.discard(name)
            log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop()
            self._logs[name] = log
            self.procs[name] = subprocess.Popen(
                [sys.executable, str(BASE_DIR / "manage.py"), *args],
                cwd=BASE_DIR,
                env={**self.env, **extra},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def wait_ready(self, *names: str, since: dt.datetime, timeout: float = 30.0) -> None:
        """Wait until each named process proved it works (a heartbeat row newer than `since`)."""
        from owlat.models import WorkerHeartbeat

        names = names or tuple(WORKER_PROCESSES)
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
            log = self._logs.pop(name, None)
            if log is not None:
                log.close()

    def kill(self, *names: str) -> None:
        """Simulate a crash: SIGKILL the named processes at once."""
        self.stop(*names, sig=signal.SIGKILL, grace=0.0)

    def restart(self, *names: str, timeout: float = 30.0) -> None:
        from django.utils import timezone

        names = names or tuple(WORKER_PROCESSES)
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
        for name in WORKER_PROCESSES:
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
            "DELIVERY_TRANSACTIONAL_RATE": str(settings.DELIVERY_TRANSACTIONAL_RATE),
            "DELIVERY_CAMPAIGN_RATE": str(settings.DELIVERY_CAMPAIGN_RATE),
            "POSTHOG_API_KEY": settings.POSTHOG_API_KEY or "",
            "POSTHOG_HOST": settings.POSTHOG_HOST,
            "Q_POLL": "0.02",
            "DUE_TASK_POLL_SECONDS": "0.05",
            "Q_WORKERS": "2",
            "Q_TRANSACTIONAL_WORKERS": "1",
            "Q_CAMPAIGN_WORKERS": "1",
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
    ws = WorkerSet(env, log_dir)
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


# ==========================================================================================================
# Recording HTTP server
# ==========================================================================================================


@dataclasses.dataclass
class Reply:
    """One programmed HTTP answer."""

    status: int = 200
    body: bytes | str | dict | list = b""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (client timeouts)


@dataclasses.dataclass
class RecordedRequest:
    method: str
    path: str  # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]  # header names lower-cased
    body: bytes
    status: int  # what the receiver answered
    at: float

    def json(self) -> Any:
        data = self.body
        if self.headers.get("content-encoding") == "gzip":
            data = gzip.decompress(data)
        return json.loads(data or b"null")

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class HttpReceiver:
    """A threaded HTTP server on 127.0.0.1 that records every request.

    - `url` (base URL, no trailing slash), `requests` (list of `RecordedRequest`)
    - `statuses`: answers consumed one per request — ints or `Reply`s, e.g. `[500, 500, 200]`; when empty the
      answer is `default` (200, empty body)
    - `handler`: optional `fn(RecordedRequest) -> Reply | int | None` deciding the answer (None = use the script)
    - `wait_for(n, timeout)`, `requests_to(path)`, `clear()`
    """

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.statuses: list[int | Reply] = []
        self.default: Reply = Reply(200, b"")
        self.handler: Callable[[RecordedRequest], Reply | int | None] | None = None
        self._cond = threading.Condition()
        receiver = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                req = RecordedRequest(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    status=0,
                    at=time.monotonic(),
                )
                reply = receiver._reply_for(req)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                headers = dict(reply.headers)
                if isinstance(payload, dict | list):
                    payload = json.dumps(payload).encode()
                    headers.setdefault("Content-Type", "application/json")
                elif isinstance(payload, str):
                    payload = payload.encode()
                req.status = reply.status
                with receiver._cond:
                    receiver.requests.append(req)
                    receiver._cond.notify_all()
                try:
                    self.send_response(reply.status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="http-receiver")

    def _reply_for(self, req: RecordedRequest) -> Reply:
        chosen: Reply | int | None = None
        if self.handler is not None:
            chosen = self.handler(req)
        if chosen is None:
            with self._cond:
                chosen = self.statuses.pop(0) if self.statuses else self.default
        return Reply(chosen) if isinstance(chosen, int) else chosen

    def start(self) -> HttpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_for(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.requests) >= n, timeout=timeout)
            if not ok:
                raise AssertionError(
                    f"HTTP receiver: expected {n} request(s) within {timeout:.1f}s, got {len(self.requests)}"
                )
            return list(self.requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._cond:
            return [r for r in self.requests if r.path == path]

    def clear(self) -> None:
        with self._cond:
            self.requests.clear()
            self.statuses.clear()


@pytest.fixture
def http_receiver():
    """A local HTTP server recording requests, with a programmable answer sequence (`statuses`)."""
    receiver = HttpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()


# ==========================================================================================================
# Running queued django-q2 tasks in-process
# ==========================================================================================================


@dataclasses.dataclass
class QueuedTask:
    id: int  # OrmQ row id
    queue: str  # "default" | "transactional" | "campaign"
    func: str
    args: tuple
    kwargs: dict
    package: dict


@dataclasses.dataclass
class DrainedTask:
    func: str
    args: tuple
    kwargs: dict
    queue: str
    ok: bool
    result: Any  # the function's return value (or the exception when ok is False)
    error: BaseException | None = None


def _require_orm_broker() -> None:
    from django.conf import settings

    if "orm" not in settings.Q_CLUSTER:
        raise RuntimeError("drain_queue/queued_tasks need the django-q2 ORM broker (REDIS_URL must be unset)")


def _func_name(func: Any) -> str:
    return func if isinstance(func, str) else f"{func.__module__}.{func.__qualname__}"


def queued_tasks(queue: str | None = None) -> list[QueuedTask]:
    """Tasks waiting in the django-q2 ORM broker (all queues, or `queue`), oldest first, decoded."""
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    _require_orm_broker()
    qs = OrmQ.objects.order_by("id")
    if queue is not None:
        qs = qs.filter(key=queue)
    out = []
    for row in qs:
        pkg = SignedPackage.loads(row.payload)
        out.append(
            QueuedTask(row.id, row.key, _func_name(pkg["func"]), tuple(pkg["args"]), dict(pkg["kwargs"]), pkg)
        )
    return out


def drain_queue(
    max_tasks: int = 1000,
    *,
    queue: str | None = None,
    dispatch_due: bool = True,
    raise_errors: bool = True,
) -> list[DrainedTask]:
    """Run queued django-q2 tasks in this process, oldest first, until none is left; returns what ran.

    Tasks enqueued by the tasks that run are run too (FIFO), and so are django-q2 chains. `queue` limits it
    to one queue ("default", "transactional", "campaign"). With `dispatch_due`, due-task rows that are due now
    (`owlat.jobs.dispatch_due_tasks`) are handed over before each task; future ones stay. Stops after
    `max_tasks` tasks (check `queued_tasks()` for what is left). An exception in a task propagates unless
    `raise_errors=False`, in which case it is returned as a failed `DrainedTask`.
    """
    from django_q.brokers import get_broker
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage
    from django_q.tasks import async_chain

    from owlat.jobs import dispatch_due_tasks

    _require_orm_broker()
    ran: list[DrainedTask] = []
    while len(ran) < max_tasks:
        if dispatch_due:
            dispatch_due_tasks()
        qs = OrmQ.objects.order_by("id")
        if queue is not None:
            qs = qs.filter(key=queue)
        row = qs.first()
        if row is None:
            break
        OrmQ.objects.filter(id=row.id).delete()
        pkg = SignedPackage.loads(row.payload)
        func = pkg["func"]
        target = func if callable(func) else pydoc.locate(func)
        args, kwargs = tuple(pkg.get("args", ())), dict(pkg.get("kwargs", {}))
        if target is None:
            error: BaseException = ValueError(f"Function {func} is not defined")
            if raise_errors:
                raise error
            ran.append(DrainedTask(_func_name(func), args, kwargs, row.key, False, error, error))
            continue
        try:
            result = target(*args, **kwargs)
        except Exception as exc:
            if raise_errors:
                raise
            ran.append(DrainedTask(_func_name(func), args, kwargs, row.key, False, exc, exc))
            continue
        ran.append(DrainedTask(_func_name(func), args, kwargs, row.key, True, result))
        if pkg.get("chain"):
            async_chain(pkg["chain"], group=pkg.get("group"), broker=get_broker(row.key))
    return ran
