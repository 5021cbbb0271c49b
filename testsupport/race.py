"""Racing callers: the same action in several threads released at once, for the compare-and-set tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def race(action: Callable[[int], T], threads: int = 2, *, timeout: float = 60.0) -> list[T]:
    """Call `action(i)` for i in range(threads), each in its own thread, all released together by a barrier;
    each thread closes its own database connection. Returns the results in the order the calls finished; an
    exception in any thread is raised here (after all have ended)."""
    barrier = threading.Barrier(threads)
    results: list[T] = []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        from django.db import connection

        try:
            barrier.wait()
            results.append(action(i))
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout)
    if errors:
        raise errors[0]
    assert not any(worker.is_alive() for worker in workers), f"a racing call did not end within {timeout}s"
    return results
