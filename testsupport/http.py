"""A local HTTP server that records requests and answers from a script: the `http_receiver` fixture (customer
webhooks, PostHog and ESP stand-ins)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

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
