#!/usr/bin/env python
"""In-process profile of the transactional pool's job on automation mail (issue 12): CPU and statements per mail.

No qcluster, no broker: automation send rows are queued the way the walker queues them
(`automation_email_queue_many`, on the world `automation_throughput.py` builds, in a fresh PostgreSQL database
from `BENCH_DATABASE_URL`), then `delivery.tasks.send_batch_task` runs in this process, one job per enqueued
chunk, against a loopback SMTP sink in a process of its own (bench/common.Sink, so the sink's CPU is not
counted here). Printed: CPU milliseconds per mail of this process (`time.process_time`, all of its threads; the
PostgreSQL backend's work is not included), statements per mail (every thread's, counted by a database
execute wrapper), rows per job, and with `--profile` where the job's threads spend their time (cProfile of every
thread, CPU clock).

Run: `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/owlat_bench_drain .venv/bin/python
bench/profile_delivery.py --mails 2000 [--chunk 100] [--profile]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
sys.path.insert(0, str(BASE_DIR / "bench"))

from common import Sink, free_port, recreate_database  # noqa: E402

PARSE_IN_SINK = os.environ.get("PROFILE_SINK_PARSE", "0") == "1"  # as automation_throughput.py's sink
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_drain"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mails", type=int, default=2000, help="measured mails")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--chunk", type=int, default=0, help="rows per queue call (0: all at once, as one batch)")
    p.add_argument(
        "--interleave",
        action="store_true",
        help="run the jobs after each --chunk is queued (small jobs, as a walker keeping up with the API makes)",
    )
    p.add_argument("--profile", action="store_true", help="cProfile the measured pass (CPU clock)")
    p.add_argument("--sort", default="tottime")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--sql", action="store_true", help="print the statement shapes of the measured pass")
    p.add_argument(
        "--inproc-sink",
        action="store_true",
        help="the SMTP sink automation_throughput.py uses (testsupport.SmtpSink: in this process, every message "
        "parsed) instead of the bench/common one in a process of its own",
    )
    p.add_argument(
        "--cluster",
        action="store_true",
        help="drain through a real transactional qcluster (1 worker) instead of in-process: prints the drain "
        "time and the cluster's CPU ms per mail (/proc)",
    )
    return p.parse_args()


def main() -> int:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    print(f"database {url} (re-created)", flush=True)
    recreate_database(url)
    sink = _InProcessSink() if args.inproc_sink else Sink(free_port())
    os.environ.update(
        {
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
            "EMAIL_PROVIDER": "smtp",
            "EMAIL_URL": sink.url,
            "DELIVERY_TRANSACTIONAL_RATE": "0",
        }
    )
    from automation_world import build_world, setup_django

    setup_django(url)
    from django.db import connection

    from delivery.models import TransactionalSend
    from delivery.services.automation import AutomationEmailRequest, automation_email_queue_many
    from owlat.models import Contact

    world = build_world(1, {"warm": args.warmup, "load": args.mails})
    org, automation = world["org"], world["automation"]
    template_id = str(automation.steps.order_by("step_index").first().config["emailTemplateId"])

    def queue(label: str, after_each=None) -> None:
        contacts = list(Contact.objects.filter(organization=org, email__startswith=f"{label}-"))
        size = args.chunk or len(contacts)
        for start in range(0, len(contacts), size):
            if after_each is not None and start:
                after_each()
            automation_email_queue_many(
                [
                    AutomationEmailRequest(
                        organization_id=str(org.pk),
                        contact_id=str(c.pk),
                        automation_id=str(automation.pk),
                        email_template_id=template_id,
                        contact=c,
                    )
                    for c in contacts[start : start + size]
                ]
            )

    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    from delivery.tasks import send_batch_task

    meter = {"cpu": 0.0, "on": False}  # the jobs' CPU and statements only, not the queueing's

    def run_jobs() -> Counter:
        meter["on"], started = True, time.process_time()
        try:
            return _run_jobs()
        finally:
            meter["on"], meter["cpu"] = False, meter["cpu"] + time.process_time() - started

    def _run_jobs() -> Counter:
        """Run every queued transactional job in this process, oldest first; returns rows claimed per job."""
        per_job: Counter = Counter()
        while True:
            batch = list(OrmQ.objects.filter(key="transactional").order_by("id")[:50])
            if not batch:
                return per_job
            OrmQ.objects.filter(pk__in=[b.pk for b in batch]).delete()
            for item in batch:
                task = SignedPackage.loads(item.payload)
                summary = send_batch_task(*task["args"], **task["kwargs"])
                claimed = int(summary.split("claimed ")[1].split(",")[0])
                per_job[claimed] += 1

    statements: Counter = Counter()
    lock = threading.Lock()

    def counting(execute, sql, params, many, context):
        if not meter["on"]:
            return execute(sql, params, many, context)
        with lock:
            statements[sql.split(" ", 1)[0] + " " + _table_of(sql)] += 1
        return execute(sql, params, many, context)

    if args.cluster:
        return drain_with_cluster(
            args, url, sink, queue, lambda: TransactionalSend.objects.filter(status="sent")
        )
    queue("warm")
    run_jobs()
    sent_before = TransactionalSend.objects.filter(status="sent").count()
    if not args.interleave:
        queue("load")
    from django.db.backends.signals import connection_created

    def install(sender, connection, **kwargs):
        connection.execute_wrappers.append(counting)

    connection_created.connect(install)
    connection.execute_wrappers.append(counting)
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile(time.thread_time)  # the job thread's own CPU
        threading.setprofile(lambda *a: None)
        profiler.enable()
    meter["cpu"], w0 = 0.0, time.perf_counter()
    if args.interleave:
        per_job = Counter()
        queue("load", after_each=lambda: per_job.update(run_jobs()))
        per_job.update(run_jobs())
    else:
        per_job = run_jobs()
    cpu, wall = meter["cpu"], time.perf_counter() - w0
    if profiler is not None:
        profiler.disable()
    connection.execute_wrappers.remove(counting)
    sent = TransactionalSend.objects.filter(status="sent").count() - sent_before
    # this script's stand-in for the broker (reading and deleting the jobs) is not the job's work
    total_statements = sum(n for shape, n in statements.items() if "django_q_" not in shape)
    print(
        f"{sent} of {args.mails} mails sent in {sum(per_job.values())} jobs (rows per job: "
        f"{dict(sorted(per_job.items()))}); load {os.getloadavg()[0]:.1f}"
    )
    print(f"CPU ms per mail (this process, all threads): {1000 * cpu / max(sent, 1):.3f}")
    print(
        f"statements per mail (all threads, the broker stand-in not counted): {total_statements / max(sent, 1):.2f}"
    )
    print(
        f"wall {wall:.1f} s ({sent / wall:.0f} mails/s in-process, not a throughput figure on a shared machine)"
    )
    if args.sql:
        for shape, n in statements.most_common():
            print(f"  {n:6d}  {shape}")
    if profiler is not None:
        import pstats

        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.top)
    sink.stop()
    return 0


def drain_with_cluster(args, url, sink, queue, sent_rows) -> int:
    """The rows queued in jobs of `--chunk` while a real transactional cluster (one worker) drains them."""
    from common import Processes, base_env
    from measure import cpu_seconds, tree_pids

    profile_dir = BASE_DIR / "var" / "bench" / "profile-delivery"
    extra = {
        "EMAIL_PROVIDER": "smtp",
        "EMAIL_URL": sink.url,
        "DELIVERY_TRANSACTIONAL_RATE": "0",
        "Q_TRANSACTIONAL_WORKERS": "1",
        "OWLAT_DELIVERY_PROFILE": str(profile_dir),
        "OWLAT_DELIVERY_PROFILE_FUNCS": os.environ.get("OWLAT_DELIVERY_PROFILE_FUNCS", ""),
        "SECRET_KEY": os.environ["SECRET_KEY"],  # the broker's packages are signed with it
        "SITE_URL": os.environ["SITE_URL"],
    }
    procs = Processes(base_env(url, **extra), BASE_DIR / "var" / "bench" / "logs-profile-delivery")
    procs.start("transactional", ["qcluster"], Q_CLUSTER_NAME="transactional")
    try:
        queue("warm")
        deadline = time.monotonic() + 120
        while sink.count()[0] < args.warmup:
            procs.check_alive()
            if time.monotonic() > deadline:
                raise SystemExit("warm-up mails did not arrive")
            time.sleep(0.05)
        time.sleep(0.5)
        from django.db import transaction

        pids = tree_pids([procs.procs["transactional"].pid])
        before = sink.count()[0]
        with transaction.atomic():  # the rows and their jobs appear at once (the ORM broker is transactional)
            queue("load")
        cpu0, t0 = cpu_seconds(pids), time.perf_counter()
        target = before + args.mails
        while (n := sink.count()[0]) < target:
            procs.check_alive()
            if time.perf_counter() - t0 > 600:
                raise SystemExit(f"{n - before} of {args.mails} mails after 600 s")
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(pids) - cpu0
        print(
            f"cluster: {args.mails} mails in {wall:.1f} s ({args.mails / wall:.0f} mails/s, load "
            f"{os.getloadavg()[0]:.1f}: not a throughput figure on a shared machine); cluster CPU ms per mail "
            f"{1000 * cpu / args.mails:.3f}; sent rows {sent_rows().count()}"
        )
        import json

        deadline = time.monotonic() + 30  # the profile is written when a job ends
        while time.monotonic() < deadline and sum(
            json.loads(f.read_text())["messages"] for f in profile_dir.glob("worker-*.json")
        ) < (args.warmup + args.mails):
            time.sleep(0.2)
        for f in profile_dir.glob("worker-*.json"):
            print(f"  {f.name}: {f.read_text()}")
        if args.profile:
            import pstats

            time.sleep(2)  # the empty jobs after the drain write the profile again
            for f in profile_dir.glob("worker-*.prof"):
                pstats.Stats(str(f)).sort_stats(args.sort).print_stats(args.top)
    finally:
        procs.stop()
        sink.stop()
        import shutil

        shutil.rmtree(profile_dir, ignore_errors=True)
    return 0


class _InProcessSink:
    """testsupport.SmtpSink with bench/common.Sink's `url`, `count` and `stop`."""

    def __init__(self) -> None:
        from testsupport import SmtpSink

        self._sink = SmtpSink(parse=PARSE_IN_SINK).start()
        self.url = self._sink.url

    def count(self) -> tuple[int, float, float]:
        return len(self._sink.messages), 0.0, 0.0

    def stop(self) -> None:
        self._sink.stop()


def _table_of(sql: str) -> str:
    for word in (" FROM ", " INTO ", "UPDATE "):
        if word in sql:
            return sql.split(word, 1)[1].split(" ", 1)[0].strip('"')
    return ""


if __name__ == "__main__":
    raise SystemExit(main())
