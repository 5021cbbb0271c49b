"""Measuring helpers of the benchmarks: waiting for a server or a condition, percentiles, and the peak resident
set of a process tree (Linux /proc), so growth with size is visible (issue 12 item 7)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path


def wait_http(url: str, timeout: float = 30.0) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"API did not answer at {url}")


def tree_pids(roots: list[int]) -> list[int]:
    """The root pids and all their descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def reset_peak_rss(pids: list[int]) -> None:
    """Start a new peak (`echo 5 > /proc/<pid>/clear_refs`, Linux ≥ 4.0)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")


def peak_rss_mib(pids: list[int]) -> float:
    """Sum of the processes' peak resident sets (VmHWM) since the last reset, in MiB."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, progress: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    last = 0.0
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}: {progress()}")
        if time.monotonic() - last > 10:
            print(f"  … {progress()}", flush=True)
            last = time.monotonic()
        time.sleep(0.2)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """CPU seconds each process has used so far (Linux /proc/<pid>/stat): user + system time plus that of its
    children it has waited for (cutime, cstime), so a recycled worker's CPU stays in its parent's figure. A
    process that has ended is absent."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime, stime, cutime, cstime (fields 14-17 of stat)
        out[pid] = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    return out


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds a process tree has used so far (`tree_pids`): a child that ended was waited for by a parent in
    the same tree, so its time moves into that parent's figure and the sum never goes back."""
    return sum(cpu_by_pid(pids).values())


def cpu_since(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds used between two `cpu_by_pid` snapshots of processes whose parent is not among them
    (PostgreSQL backends): one started in between counts whole, one that ended in between is lost, so the figure
    can be under-counted, never negative."""
    return sum(max(0.0, used - before.get(pid, 0.0)) for pid, used in after.items())
