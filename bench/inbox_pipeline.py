#!/usr/bin/env python
"""Benchmark of the inbox agent pipeline (issue 10; method per spec D-17).

Setup (not timed): a fresh PostgreSQL database (`BENCH_DATABASE_URL`, default
`postgres://postgres@127.0.0.1:5432/owlat_bench_inbox`, dropped and re-created), one organization with the `ai`
flag on and the default agent configuration (shadow mode on, so every message ends in `draft_ready` after all five
steps), the loopback chat-completions server (`testsupport.llm`, answering at once) in this process, and real
`qcluster` processes for the inbox queue (`INBOX_QUEUE`, its own cluster). The AGT-02 pipeline-start limits are lifted through their documented
settings (`INBOX_START_RATE_PER_SENDER=0`, `INBOX_START_RATE_GLOBAL=0`, D-17). The `--messages` (1,000) inbound
messages are stored through the receive path before timing (with `ai.agent` off, so nothing starts); then the
flag is switched on and one `message_start` task per message (which also runs the security scan) is enqueued at t0.

Measured: messages/second end to end (t0 → the last `route` step completed); per step kind the overhead p50/p95
(the action's duration minus the time spent in model calls, i.e. step execution outside the model) and,
separately, the queue wait p50/p95 (the step task enqueued → claimed). A warm-up of `--warmup` messages runs
first. The load average is printed at start and end.

Where the time went at 5.9 messages/s (the first measurement): the loopback stand-in answered each model call
~40 ms late (Nagle's algorithm held its response body back until the client's delayed ACK), and the pipeline makes
four model calls per message — ~160 ms of stall per message with two workers. The stand-in now answers at once
(TCP_NODELAY); and the start hop runs the security scan in the same task execution (six task executions per
message became five, still one step per execution). Queue wait is the backlog of a saturated queue (all messages
are enqueued at t0), not latency of a single hop; the per-hop floor is django-q2's poll interval (`Q_POLL`, 10 ms
here).

Targets (issue 10): ≥ 20 messages/s on this machine; step overhead p95 < 50 ms. A missed target is reported as
MISSED with where the time goes. Run: `.venv/bin/python bench/inbox_pipeline.py` on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from bench.common import Processes, base_env, write_json  # noqa: E402
from bench.inbox_world import InboxWorld, start_inbox_bench  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_inbox"
TARGET_MESSAGES_PER_SECOND = 20.0
TARGET_OVERHEAD_P95_MS = 50.0
STEPS = ("security_scan", "context_retrieval", "classify", "draft", "route")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--q-workers", type=int, default=2, help="worker processes of the inbox queue")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--json", default=str(BASE_DIR / "var" / "bench" / "inbox_pipeline.json"))
    return p.parse_args()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def main() -> int:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    llm, extra = start_inbox_bench(url, Q_POLL="0.01")

    from django.db import transaction

    from inbox.models import AgentAction, InboundMessage
    from inbox.queues import inbox_queue
    from owlat.jobs import enqueue

    world = InboxWorld()
    set_agent, store = world.set_agent, world.store

    def start_all(ids: list[str]) -> float:
        set_agent(True)
        t0 = time.time()
        with transaction.atomic():
            for pk in ids:
                enqueue("inbox.tasks.message_start_task", pk, queue=inbox_queue())
        return t0

    def wait_done(ids: list[str], procs: Processes) -> None:
        deadline = time.monotonic() + args.timeout
        while True:
            done = InboundMessage.objects.filter(
                pk__in=ids, processing_status__in=("draft_ready", "failed")
            ).count()
            if done >= len(ids):
                return
            procs.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{done}/{len(ids)} messages done after {args.timeout:.0f}s")
            time.sleep(0.2)

    env = base_env(url, **extra, Q_INBOX_WORKERS=str(args.q_workers))
    procs = Processes(env, BASE_DIR / "var" / "bench" / "inbox-logs")
    procs.start("inbox", ["qcluster"], Q_CLUSTER_NAME="inbox")
    try:
        set_agent(False)
        warm = store("warm", args.warmup)
        start_all(warm)
        wait_done(warm, procs)
        set_agent(False)
        ids = store("msg", args.messages)
        t0 = start_all(ids)
        wait_done(ids, procs)
    finally:
        procs.stop()
        llm.stop()

    actions = list(
        AgentAction.objects.filter(inbound_message_id__in=ids).values_list(
            "action_type", "status", "duration_ms", "output", "scheduled_at", "started_at", "completed_at"
        )
    )
    last = max(a[6] for a in actions if a[0] == "route" and a[6] is not None).timestamp()
    failed = InboundMessage.objects.filter(pk__in=ids, processing_status="failed").count()
    rate = len(ids) / (last - t0)
    report: dict = {
        "messages": len(ids),
        "failed": failed,
        "seconds": round(last - t0, 3),
        "messagesPerSecond": round(rate, 2),
        "steps": {},
    }
    overhead_all: list[float] = []
    for kind in STEPS:
        rows = [a for a in actions if a[0] == kind and a[1] == "completed"]
        overhead = [max(0.0, (a[2] or 0) - float((a[3] or {}).get("llmDurationMs") or 0)) for a in rows]
        waits = [(a[5] - a[4]).total_seconds() * 1000 for a in rows if a[4] and a[5]]
        llm_ms = [float((a[3] or {}).get("llmDurationMs") or 0) for a in rows]
        overhead_all += overhead
        report["steps"][kind] = {
            "count": len(rows),
            "overheadP50Ms": round(pct(overhead, 0.5), 1),
            "overheadP95Ms": round(pct(overhead, 0.95), 1),
            "queueWaitP50Ms": round(pct(waits, 0.5), 1),
            "queueWaitP95Ms": round(pct(waits, 0.95), 1),
            "modelP50Ms": round(pct(llm_ms, 0.5), 1),
        }
    report["overheadP95Ms"] = round(pct(overhead_all, 0.95), 1)
    report["overheadMeanMs"] = round(statistics.fmean(overhead_all), 1) if overhead_all else None
    report["loadAverageEnd"] = os.getloadavg()

    print(f"\n{len(ids)} messages, {failed} failed, {report['seconds']} s → {rate:.1f} messages/s end to end")
    print(f"{'step':<18} {'overhead p50':>12} {'p95':>8} {'queue p50':>10} {'p95':>8} {'model p50':>10}")
    for kind, s in report["steps"].items():
        print(
            f"{kind:<18} {s['overheadP50Ms']:>10.1f}ms {s['overheadP95Ms']:>6.1f}ms {s['queueWaitP50Ms']:>8.1f}ms "
            f"{s['queueWaitP95Ms']:>6.1f}ms {s['modelP50Ms']:>8.1f}ms"
        )
    ok_rate = rate >= TARGET_MESSAGES_PER_SECOND
    ok_overhead = report["overheadP95Ms"] < TARGET_OVERHEAD_P95_MS
    print(
        f"throughput target ≥ {TARGET_MESSAGES_PER_SECOND:.0f}/s: {'met' if ok_rate else 'MISSED'} ({rate:.1f}/s)"
    )
    print(
        f"step overhead p95 < {TARGET_OVERHEAD_P95_MS:.0f} ms: {'met' if ok_overhead else 'MISSED'} "
        f"({report['overheadP95Ms']} ms)"
    )
    if not ok_rate:
        slowest = max(
            report["steps"].items(), key=lambda kv: kv[1]["queueWaitP50Ms"] + kv[1]["overheadP50Ms"]
        )
        print(f"where the time goes: slowest hop {slowest[0]} (queue wait + overhead p50 per step above)")
    print(f"load average at end: {report['loadAverageEnd']}")
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
