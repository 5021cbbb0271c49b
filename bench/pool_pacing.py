#!/usr/bin/env python
"""Pool pacing benchmark (issue 3; method per spec D-17).

Setup (not timed): a fresh PostgreSQL database (`--database`, default
`postgres://postgres@127.0.0.1:5432/owlat_bench_pacing`), one organization with a verified sending domain and a
default sender, a published transactional email `welcome`, a campaign template, and 20,000 queued campaign send
rows (created through `create_batch` and handed to the campaign pool before the window opens). Real processes:
the API (gunicorn, 2 workers × 4 threads), `qcluster` for the `transactional` and `campaign` queues (one worker
process each, the default), `run_due_tasks`, and a loopback SMTP sink (aiosmtpd) in its own process. Pacing is
at its defaults: campaign 20 messages/s, transactional 30 messages/s (burst one second). `DEBUG=0`.

Window: after `--settle` seconds (the campaign pool's initial one-second burst is spent before the window), for
`--seconds` (60) seconds transactional sends are offered through `POST /api/v1/transactional` at a fixed open-loop
rate of `--rate` (25/s), spread round-robin over `--keys` API keys (2.5 requests/s per key, under the per-key
limit of 10/s, so the API limiter is not what is measured), each to a new recipient.

Printed: each pool's achieved rate over the window (acceptances at the SMTP sink inside the window ÷ its length;
targets within 5 % of 20/s for the campaign pool and of the offered 25/s for the transactional pool) and the
transactional p50/p95/max from the start of the API call to the SMTP acceptance (target p95 under 250 ms, issue 12).
A missed target is reported as missed.

Run: `.venv/bin/python bench/pool_pacing.py` (about 2–3 minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    BASE_DIR,
    Processes,
    Sink,
    base_env,
    free_port,
    recreate_database,
    setup_django,
    write_json,
)

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_pacing"
CAMPAIGN_RATE = 20.0
TOLERANCE = 0.05
TARGET_P95 = 0.25  # issue 12: under campaign load


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--rate", type=float, default=25.0, help="offered transactional sends per second")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--settle", type=float, default=5.0)
    p.add_argument("--keys", type=int, default=10)
    p.add_argument("--database", default=DEFAULT_DB)
    p.add_argument("--json", default=str(BASE_DIR / "var" / "bench" / "pool_pacing.json"))
    return p.parse_args()


def seed(rows: int, keys: int):
    from delivery.services import CampaignSendContext
    from owlat.apikeys import api_key_create
    from owlat.models import Contact, Domain, DomainStatus
    from owlat.organizations import organization_create
    from templates.models import EmailTemplate, TransactionalEmail
    from testsupport.world import campaign_send_rows

    org = organization_create(name="Bench", default_from_email="hello@bench.test", default_from_name="Bench")
    Domain.objects.create(organization=org, domain="bench.test", status=DomainStatus.VERIFIED)
    tx = TransactionalEmail.objects.create(
        organization=org,
        slug="welcome",
        name="Welcome",
        subject="Welcome {{firstName|'there'}}",
        html_content="<html><body><h1>Welcome {{firstName|'there'}}</h1><p>Your code is {{code}}.</p></body></html>",
    )
    TransactionalEmail.objects.filter(pk=tx.pk).update(status="published")
    template = EmailTemplate.objects.create(
        organization=org,
        name="News",
        subject="News for {{firstName}}",
        html_content='<p>Hello {{firstName}}</p><p><a href="https://example.org/n">Read</a></p>',
    )
    Contact.objects.bulk_create(
        [
            Contact(organization=org, email=f"camp{i:06d}@example.com", first_name=f"C{i}")
            for i in range(rows)
        ],
        batch_size=2000,
    )
    ids = campaign_send_rows(
        org, template, CampaignSendContext(from_email="hello@bench.test", from_name="Bench")
    )
    raw_keys = [
        api_key_create(organization_id=org.pk, name=f"bench {i}", scopes=["transactional:send"])[1]
        for i in range(keys)
    ]
    return ids, raw_keys


api_times: list[float] = []


def offer_load(base_url: str, keys: list[str], rate: float, seconds: float) -> list[tuple[str, float, int]]:
    """Open loop at a fixed rate: request i starts at t0 + i / rate, whatever earlier requests do."""
    import requests

    sessions = [requests.Session() for _ in keys]
    total = int(rate * seconds)
    results: list[tuple[str, float, int]] = []
    lock = threading.Lock()
    api_times.clear()
    t0 = time.time() + 0.2

    def one(i: int) -> None:
        due = t0 + i / rate
        delay = due - time.time()
        if delay > 0:
            time.sleep(delay)
        email = f"tx{i:05d}@example.com"
        started = time.time()
        k = i % len(keys)
        try:
            r = sessions[k].post(
                f"{base_url}/api/v1/transactional",
                json={
                    "email": email,
                    "slug": "welcome",
                    "dataVariables": {"firstName": f"T{i}", "code": str(i)},
                },
                headers={"Authorization": f"Bearer {keys[k]}"},
                timeout=30,
            )
            status = r.status_code
        except Exception:  # a failed request is recorded as status 0
            status = 0
        with lock:
            results.append((email, started, status))
            api_times.append(time.time() - started)

    with ThreadPoolExecutor(max_workers=64) as pool:
        list(pool.map(one, range(total)))
    return results


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    index = min(len(values) - 1, max(0, round(p / 100 * len(values) + 0.5) - 1))
    return values[index]


def main() -> int:
    args = parse_args()
    print(f"Preparing database {args.database} … (load average {os.getloadavg()[0]:.1f})", flush=True)
    recreate_database(args.database)
    sink = Sink(free_port())
    web_port = free_port()
    extra = {
        "EMAIL_PROVIDER": "smtp",
        "EMAIL_URL": sink.url,
        "DELIVERY_CAMPAIGN_RATE": str(CAMPAIGN_RATE),
        "DELIVERY_TRANSACTIONAL_RATE": "30",
        "Q_POLL": "0.02",
        "SITE_URL": f"http://127.0.0.1:{web_port}",
    }
    setup_django(args.database, **extra)
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    t = time.monotonic()
    ids, keys = seed(args.rows, args.keys)
    print(
        f"Seeded {len(ids)} campaign rows and {len(keys)} API keys in {time.monotonic() - t:.1f}s", flush=True
    )

    procs = Processes(base_env(args.database, **extra), BASE_DIR / "var" / "bench" / "logs-pacing")
    procs.start_web("web", web_port)
    procs.start("transactional", ["qcluster"], Q_CLUSTER_NAME="transactional")
    procs.start("campaign", ["qcluster"], Q_CLUSTER_NAME="campaign")
    procs.start("dispatcher", ["run_due_tasks"])
    try:
        import requests

        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"http://127.0.0.1:{web_port}/api/v1/health", timeout=2)
                break
            except requests.RequestException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        procs.check_alive()
        from django.db import transaction

        from delivery.services import sends_enqueue

        with transaction.atomic():
            sends_enqueue("campaign", ids)
        time.sleep(args.settle)
        window_start = time.time()
        results = offer_load(f"http://127.0.0.1:{web_port}", keys, args.rate, args.seconds)
        window_end = window_start + args.seconds
        offered = len(results)
        accepted_api = [r for r in results if r[2] == 202]
        # wait for the last transactional sends to arrive (they are paced at 30/s, well above the offer)
        wait_until = time.monotonic() + 30
        while time.monotonic() < wait_until:
            rows = sink.dump()
            tx = {rcpt for _, rcpt in rows if rcpt.startswith("tx")}
            if len(tx) >= len(accepted_api):
                break
            time.sleep(0.5)
        rows = sink.dump()
        procs.check_alive()
    finally:
        procs.stop()
        sink.stop()

    in_window = [(ts, rcpt) for ts, rcpt in rows if window_start <= ts < window_end]
    campaign_rate = sum(1 for _, r in in_window if r.startswith("camp")) / args.seconds
    tx_rate = sum(1 for _, r in in_window if r.startswith("tx")) / args.seconds
    accepted_at = {}
    for ts, rcpt in rows:
        if rcpt.startswith("tx") and rcpt not in accepted_at:
            accepted_at[rcpt] = ts
    latencies = [
        accepted_at[email] - started for email, started, status in accepted_api if email in accepted_at
    ]
    missing = len(accepted_api) - len(latencies)
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    worst = max(latencies) if latencies else float("nan")

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    campaign_ok = abs(campaign_rate - CAMPAIGN_RATE) <= TOLERANCE * CAMPAIGN_RATE
    tx_ok = abs(tx_rate - args.rate) <= TOLERANCE * args.rate
    p95_ok = p95 < TARGET_P95 and missing == 0
    print(
        f"Offered transactional: {offered} requests ({args.rate:g}/s over {args.seconds:g}s), {len(accepted_api)} answered 202"
    )
    print(
        f"Campaign pool:      {campaign_rate:.2f} messages/s (target {CAMPAIGN_RATE:g} ± 5 %: {verdict(campaign_ok)})"
    )
    print(f"Transactional pool: {tx_rate:.2f} messages/s (target {args.rate:g} ± 5 %: {verdict(tx_ok)})")
    print(
        f"Transactional latency API call → SMTP acceptance: p50 {p50:.3f}s, p95 {p95:.3f}s, max {worst:.3f}s "
        f"(target p95 < {TARGET_P95:g}s: {verdict(p95_ok)}); not arrived: {missing}"
    )
    others: dict[int, int] = {}
    for _, _, status in results:
        if status != 202:
            others[status] = others.get(status, 0) + 1
    if others:
        print(f"(API answers other than 202: {others})")
    print(f"(API response time: p50 {percentile(api_times, 50):.3f}s, p95 {percentile(api_times, 95):.3f}s)")
    print(f"(load average at the end: {os.getloadavg()[0]:.1f})")
    write_json(
        args.json,
        {
            "load_average_end": os.getloadavg(),
            "campaign_rate": campaign_rate,
            "transactional_rate": tx_rate,
            "offered_rate": args.rate,
            "p50": p50,
            "p95": p95,
            "max": worst,
            "not_arrived": missing,
            "api_202": len(accepted_api),
            "offered": offered,
            "targets_met": {"campaign": campaign_ok, "transactional": tx_ok, "p95": p95_ok},
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
