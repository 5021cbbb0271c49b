"""The web process as `make run` starts it (the Procfile's `web:` line: gunicorn) on the test database.

`serve_web(overrides)` starts it on a free port with the worker environment (plus `overrides`), waits until
`/api/v1/health` answers and yields its base URL; the `served_app` fixture (registered by the plugin) is the
same with no overrides. Tests that use it need `django_db(transaction=True)` so the process sees their rows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testsupport.waiting import free_port, wait_until
from testsupport.workers import worker_environment

ROOT = Path(__file__).resolve().parent.parent


def web_command() -> str:
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith("web:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("the Procfile has no web process")


@contextmanager
def serve_web(overrides: dict[str, Any] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """(base URL, process) of a running web process; stopped (its whole process group) on exit."""
    port = free_port()
    env = worker_environment({"PORT": port, **(overrides or {})})
    # output to a file, not a pipe: a chatty server never blocks on a full pipe
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            ["bash", "-c", web_command()],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return urllib.request.urlopen(f"{url}/api/v1/health", timeout=2).status == 200
            except (OSError, urllib.error.URLError):
                return False

        try:
            wait_until(up, timeout=60, interval=0.2, message="the web process did not answer")
            yield url, proc
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
