"""Waiting helpers shared by the test support: free ports and polling until a condition holds."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any


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
