#!/usr/bin/env python
"""Benchmark of campaign fan-out (issue 9; method per spec D-17): audience resolution and send-row
materialization for 100,000 and 1,000,000 contacts on PostgreSQL.

Setup per size (not timed): a fresh database (`BENCH_DATABASE_URL`, default
`postgres://postgres@127.0.0.1:5432/owlat_bench_campaign`, dropped and re-created), one organization with a verified
sending domain, a single-opt-in topic with N members (generated in PostgreSQL with `INSERT … SELECT
generate_series`), a campaign template, `EMAIL_PROVIDER=local`.

System (timed): the campaign goes → `sending` through the lifecycle and the orchestrator opens the send job in this
process; the page hops (CMP-29, 500 candidates per page) run in a real `qcluster` worker process. Timing runs from
the first page task's start (the job's first `updated_at` bump is not used: the clock starts just before the orchestrator
enqueues the first hop) to the job's `finished_at` — the last committed page. Each hop reads a page, applies
eligibility, buckets, inserts the send rows (`create_batch`) and enqueues them in DLV-16 chunks of 50 (the django-q2
broker rows are part of the work). The dispatch of those send jobs is *not* part of the measurement: the walk runs
on its own queue (`CAMPAIGN_CONTROL_QUEUE=default`, a setting) and no campaign-pool worker runs, so the enqueued send
jobs stay in the broker. Peak RSS: the summed resident set of the walking cluster's process group, sampled every
100 ms.

Baseline (timed, same run, same database): read the same audience (members joined with contacts) and write the same
send rows (same columns and values) with PostgreSQL `COPY`, into a second campaign.

Printed per size: rows/second of both, the ratio system ÷ COPY, and the peak RSS; then the RSS ratio 1,000,000 ÷
100,000 and the load average. Targets (issue 9): ratio ≥ 0.3 at both sizes; peak RSS at 1,000,000 ≤ 1.2 × at
100,000 (the audience is streamed, never materialized). A missed target is reported as missed.

Run: `.venv/bin/python bench/campaign_fanout.py` (about 15–30 minutes on a 2-core machine for both sizes);
`--sizes 2000` for a quick functional run.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from bench.common import Processes, base_env, migrate, recreate_database, write_json  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_campaign"
TARGET_RATIO = 0.3
TARGET_RSS_GROWTH = 1.2


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000,1000000", help="comma-separated audience sizes")
    p.add_argument("--timeout", type=float, default=7200.0, help="give up waiting for a walk after this")
    p.add_argument("--json", default=str(BASE_DIR / "var" / "bench" / "campaign_fanout.json"))
    return p.parse_args()


# --- process-group RSS -------------------------------------------------------------------------------------


def group_rss_bytes(pgid: int) -> int:
    """Summed VmRSS of every process in process group `pgid` (from /proc)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # field 5 of /proc/<pid>/stat: pgrp
                continue
            for line in Path(entry.path, "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
                    break
        except (OSError, ValueError, IndexError):
            continue
    return total


class RssSampler(threading.Thread):
    def __init__(self, pgid: int) -> None:
        super().__init__(daemon=True)
        self.pgid = pgid
        self.peak = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, group_rss_bytes(self.pgid))
            time.sleep(0.1)


# --- setup ------------------------------------------------------------------------------------------------------


def build(size: int) -> dict:
    from django.db import connection

    from campaigns.services import campaign_create
    from owlat.models import Domain, DomainStatus, Topic
    from owlat.organizations import organization_create
    from owlat.permissions import Authority
    from templates.models import EmailTemplate

    org = organization_create(name="Bench", default_from_email="news@bench.test", default_from_name="Bench")
    Domain.objects.create(organization=org, domain="bench.test", status=DomainStatus.VERIFIED)
    topic = Topic.objects.create(organization=org, name="Everyone", require_double_opt_in=False)
    template = EmailTemplate.objects.create(
        organization=org,
        name="News",
        subject="News for {{firstName|'you'}}",
        html_content="<p>Hi {{firstName}}</p>",
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO owlat_contact (id, organization_id, email, first_name, last_name, source, timezone, "
            "language, has_opened, has_clicked, soft_bounce_count, doi_status, created_at, updated_at) "
            "SELECT gen_random_uuid(), %s, 'c' || g || '@example.com', 'First' || g, 'Last' || (g %% 997), 'import', "
            "NULL, (ARRAY['en','de','fr'])[1 + g %% 3], false, false, 0, 'not_required', now(), now() "
            "FROM generate_series(1, %s) AS g",
            [org.pk, size],
        )
        cursor.execute(
            "INSERT INTO owlat_contacttopic (id, organization_id, contact_id, topic_id, added_at, "
            "pending_doi_confirmation, consent_source, consent_user_agent) "
            "SELECT gen_random_uuid(), organization_id, id, %s, now(), false, 'bench', '' FROM owlat_contact "
            "WHERE organization_id = %s",
            [topic.pk, org.pk],
        )
        cursor.execute("ANALYZE")
    fields = {
        "email_template_id": template.pk,
        "from_email": "news@bench.test",
        "from_name": "Bench",
        "audience": {"kind": "topic", "topicId": str(topic.pk)},
    }
    system = campaign_create(
        organization_id=org.pk,
        actor="system:bench",
        fields={"name": "system", **fields},
        authority=Authority.system("bench"),
    )
    baseline = campaign_create(
        organization_id=org.pk,
        actor="system:bench",
        fields={"name": "baseline", **fields},
        authority=Authority.system("bench"),
    )
    return {"org": org, "topic": topic, "template": template, "system": system, "baseline": baseline}


# --- baseline: the same rows with COPY ----------------------------------------------------------------------------


def copy_baseline(world: dict) -> tuple[int, float]:
    """Read the audience (members ⋈ contacts, the same eligibility columns) and COPY the same send rows."""
    import uuid

    from django.db import connection, transaction
    from django.utils import timezone

    org, topic, template, campaign = world["org"], world["topic"], world["template"], world["baseline"]
    columns = (
        "id, organization_id, campaign_id, contact_id, contact_email, contact_first_name, contact_last_name, "
        "personalized_subject, language, ab_variant, email_template_id, queued_at, status, open_count, "
        "clicked_links, outcome_unknown, dispatch_attempts"
    )
    started = time.perf_counter()
    now = timezone.now()
    rows = 0
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    # a second connection streams the audience (a server-side cursor) while this one COPYs the rows
    with (
        psycopg.connect(
            host=db["HOST"],
            port=db["PORT"] or 5432,
            user=db["USER"],
            password=db["PASSWORD"],
            dbname=db["NAME"],
        ) as source,
        source.cursor(name="bench_audience") as reader,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        reader.itersize = 5000
        reader.execute(
            "SELECT c.id, c.email, c.first_name, c.last_name, c.language FROM owlat_contacttopic m "
            "JOIN owlat_contact c ON c.id = m.contact_id WHERE m.topic_id = %s AND c.deleted_at IS NULL "
            "AND c.email IS NOT NULL AND c.unsubscribed_at IS NULL ORDER BY m.contact_id",
            [topic.pk],
        )
        with cursor.cursor.copy(f"COPY delivery_emailsend ({columns}) FROM STDIN") as copy:
            for contact_id, email, first, last, language in reader:
                copy.write_row(
                    (
                        uuid.uuid4(),
                        org.pk,
                        campaign.pk,
                        contact_id,
                        email,
                        first,
                        last,
                        f"News for {first}",
                        language,
                        None,
                        template.pk,
                        now,
                        "queued",
                        0,
                        "[]",
                        False,
                        0,
                    )
                )
                rows += 1
    return rows, time.perf_counter() - started


# --- the system ------------------------------------------------------------------------------------------------------


def run_system(world: dict, procs: Processes, timeout: float) -> tuple[int, float, int]:
    from campaigns.models import CampaignSendJob
    from campaigns.orchestrator import start_campaign_send
    from campaigns.services import campaign_send_now
    from delivery.models import EmailSend
    from owlat.permissions import Authority

    campaign = world["system"]
    out = campaign_send_now(
        campaign_id=campaign.pk,
        organization_id=world["org"].pk,
        actor="system:bench",
        authority=Authority.system("bench"),
    )
    assert out.ok, out
    sampler = RssSampler(procs.procs["walker"].pid)
    sampler.start()
    started = time.perf_counter()
    assert start_campaign_send(campaign.pk) == "send job opened"  # enqueues the first hop
    deadline = time.monotonic() + timeout
    while True:
        procs.check_alive()
        job = CampaignSendJob.objects.get(campaign=campaign)
        if job.phase == "done":
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"walk not done after {timeout} s: {job.pages} pages")
        time.sleep(0.05)
    elapsed = time.perf_counter() - started  # the last page's commit became visible (50 ms poll)
    sampler.running = False
    sampler.join()
    rows = EmailSend.objects.filter(campaign_id=campaign.pk).count()
    assert rows == job.enqueued_count, (rows, job.enqueued_count)
    return rows, elapsed, sampler.peak


def measure(size: int, url: str, timeout: float) -> dict:
    from django.db import connections

    connections.close_all()
    recreate_database(url)
    migrate()
    world = build(size)
    connections.close_all()
    procs = Processes(
        base_env(url, EMAIL_PROVIDER="local", CAMPAIGN_CONTROL_QUEUE="default", Q_WORKERS="1"),
        BASE_DIR / "var" / "bench" / f"campaign_fanout_{size}",
    )
    procs.start("walker", ["qcluster"])
    try:
        time.sleep(3)  # the cluster is up (first poll)
        rows, seconds, peak = run_system(world, procs, timeout)
    finally:
        procs.stop()
    base_rows, base_seconds = copy_baseline(world)
    assert base_rows == rows == size, (base_rows, rows, size)
    result = {
        "size": size,
        "system_rows_per_second": rows / seconds,
        "system_seconds": seconds,
        "copy_rows_per_second": base_rows / base_seconds,
        "copy_seconds": base_seconds,
        "ratio": (rows / seconds) / (base_rows / base_seconds),
        "peak_rss_mb": peak / 2**20,
    }
    print(
        f"{size:>9,} contacts: system {result['system_rows_per_second']:,.0f} rows/s ({seconds:.1f} s), "
        f"COPY {result['copy_rows_per_second']:,.0f} rows/s ({base_seconds:.1f} s), ratio "
        f"{result['ratio']:.2f} (target ≥ {TARGET_RATIO}: {'met' if result['ratio'] >= TARGET_RATIO else 'MISSED'}), "
        f"peak RSS of the walking cluster {result['peak_rss_mb']:.0f} MB",
        flush=True,
    )
    return result


def main() -> None:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    os.environ.update(base_env(url, EMAIL_PROVIDER="local", CAMPAIGN_CONTROL_QUEUE="default"))
    recreate_database(url)
    import django

    django.setup()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results = [measure(size, url, args.timeout) for size in sizes]
    if len(results) >= 2:
        growth = results[-1]["peak_rss_mb"] / results[0]["peak_rss_mb"]
        verdict = "met" if growth <= TARGET_RSS_GROWTH else "MISSED"
        print(
            f"peak RSS {results[-1]['size']:,} ÷ {results[0]['size']:,}: {growth:.2f} "
            f"(target ≤ {TARGET_RSS_GROWTH}: {verdict})"
        )
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    write_json(args.json, {"results": results, "loadavg": load})


if __name__ == "__main__":
    main()
