"""A loopback chat-completions server (the OpenAI wire shape) for the inbox tests and benchmark: the
`llm_server` fixture.

The real `openai` client talks to it over HTTP. Answers are chosen per task from the `TASK: <name>` marker that
the inbox's prompts carry in their system message (`guard`, `classify`, `clarify`, `draft`, `quality`); set
`server.answers[task]` to a dict (JSON answer), a string, or a callable `fn(request_json) -> dict | str`;
`server.delays[task]` (seconds) makes a task slow (client timeouts); `server.statuses[task]` answers an HTTP
error. Every request body is recorded in `server.requests`.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DEFAULT_ANSWERS: dict[str, Any] = {
    "guard": {"isInjection": False, "confidence": 0.02, "reason": "ordinary customer mail"},
    "classify": {
        "category": "support",
        "priority": "normal",
        "sentiment": "neutral",
        "intent": "question",
        "confidence": 0.92,
    },
    "draft": "Hello,\n\nthank you for your message. You can download every invoice under Billing → Invoices.",
    "quality": {"score": 0.93, "complete": True, "grounded": True, "flags": []},
    "clarify": {"slots": []},
}
_TASK = re.compile(r"TASK:\s*([a-z_]+)")


class LlmServer:
    def __init__(self) -> None:
        self.answers: dict[str, Any] = dict(DEFAULT_ANSWERS)
        self.delays: dict[str, float] = {}
        self.statuses: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> LlmServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Answer at once: headers and body go out in separate writes, and with Nagle on, the body waits for
            # the client's delayed ACK (~40 ms per call on Linux) — a stall of the stand-in, not of the model.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = server._answer(body, self.path)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @staticmethod
    def task_of(body: dict[str, Any]) -> str:
        for msg in body.get("messages") or []:
            if msg.get("role") == "system":
                m = _TASK.search(msg.get("content") or "")
                if m:
                    return m.group(1)
        return "unknown"

    def prompts(self) -> list[str]:
        """Every message content any model call has seen."""
        with self._lock:
            return [m.get("content") or "" for r in self.requests for m in r.get("messages") or []]

    def count(self, task: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if self.task_of(r) == task)

    def _answer(self, body: dict[str, Any], path: str) -> tuple[int, dict[str, Any]]:
        task = self.task_of(body)
        with self._lock:
            self.requests.append(body)
        delay = self.delays.get(task, 0.0)
        if delay:
            time.sleep(delay)
        if task in self.statuses:
            return self.statuses[task], {"error": {"message": "scripted failure", "type": "server_error"}}
        answer = self.answers.get(task, "")
        if callable(answer):
            answer = answer(body)
        content = answer if isinstance(answer, str) else json.dumps(answer)
        prompt_tokens = sum(len(m.get("content") or "") // 4 for m in body.get("messages") or [])
        completion_tokens = max(1, len(content) // 4)
        return 200, {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "loopback",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def llm_settings(server: LlmServer, timeout: float = 5.0) -> dict[str, str]:
    """The settings/environment that point the inbox at `server`."""
    return {
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": server.url,
        "LLM_API_KEY": "loopback-key",
        "LLM_MODEL_FAST": "loopback-fast",
        "LLM_MODEL_CAPABLE": "loopback-capable",
        "LLM_TIMEOUT_SECONDS": str(timeout),
    }


@pytest.fixture
def llm_server(settings):
    """A started loopback chat-completions server; this process's settings point the inbox at it."""
    server = LlmServer().start()
    for key, value in llm_settings(server).items():
        setattr(settings, key, float(value) if key == "LLM_TIMEOUT_SECONDS" else value)
    try:
        yield server
    finally:
        server.stop()
