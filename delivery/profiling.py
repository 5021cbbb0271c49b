"""An opt-in CPU profile of the pool worker: with `OWLAT_DELIVERY_PROFILE=<directory>` in a worker's
environment, the CPU seconds of every pool job's thread and of its helper threads (the provider connections'
senders, the recorder) are added up per thread name and written after each job to
`<directory>/worker-<pid>.json`, with the jobs and messages counted. With `OWLAT_DELIVERY_PROFILE_FUNCS=1` as
well, the job's thread runs under `cProfile` timed by its own CPU clock (`time.thread_time`: waiting for the
database, the provider or the GIL does not count; the profiler's own cost does; `=wall` times it by the wall
clock instead, to see where it waits) and the accumulated profile is written to
`<directory>/worker-<pid>.prof` (read it with `pstats`). Unset (the default), nothing of this runs: the
worker asks `enabled()` once per job."""

from __future__ import annotations

import cProfile
import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_profile: cProfile.Profile | None = None
_thread_cpu: dict[str, float] = defaultdict(float)
_jobs = 0
_messages = 0


def enabled() -> bool:
    return bool(os.environ.get("OWLAT_DELIVERY_PROFILE"))


@contextmanager
def job(messages: Callable[[], int]) -> Iterator[None]:
    """Profile one job in the calling thread; `messages()` is how many messages the job handled."""
    global _profile, _jobs, _messages
    funcs = os.environ.get("OWLAT_DELIVERY_PROFILE_FUNCS", "")
    if funcs and _profile is None:
        _profile = cProfile.Profile(time.perf_counter if funcs == "wall" else time.thread_time)
    started = time.thread_time()
    if funcs and _profile is not None:
        _profile.enable()
    try:
        yield
    finally:
        if funcs and _profile is not None:
            _profile.disable()
        with _lock:
            _thread_cpu["job"] += time.thread_time() - started
            _jobs += 1
            _messages += messages()
        _dump()


def thread_cpu(name: str, seconds: float) -> None:
    """Add the CPU seconds a helper thread of a job used (called by the thread when it ends)."""
    with _lock:
        _thread_cpu[name] += seconds


def _dump() -> None:
    directory = Path(os.environ["OWLAT_DELIVERY_PROFILE"])
    directory.mkdir(parents=True, exist_ok=True)
    if _profile is not None:
        _profile.dump_stats(directory / f"worker-{os.getpid()}.prof")
    with _lock:
        data: dict[str, Any] = {
            "jobs": _jobs,
            "messages": _messages,
            "thread_cpu_seconds": dict(_thread_cpu),
        }
    (directory / f"worker-{os.getpid()}.json").write_text(json.dumps(data, indent=2))
