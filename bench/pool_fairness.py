#!/usr/bin/env python
"""Campaign pool fairness benchmark.

Setup (not timed): a fresh PostgreSQL database (`--database`, default
`postgres://postgres@127.0.0.1:5432/owlat_bench_fairness`), two organizations with verified sending domains,
one template each, a loopback SMTP sink (aiosmtpd) in its own process and a real `qcluster` for the campaign
pool (`DELIVERY_CAMPAIGN_RATE=--rate`, default 0: pacing off). Each campaign's send rows are created through
`create_batch` and handed to the pool in one transaction, as the campaign walk hands them (rows made ahead
would be taken by the other organization's jobs as waiting before the timed hand-off).

Warm-up (timed, not compared): one campaign of `--warmup` rows (default 200) per organization, sent one after
the other, so the cluster's start-up (workers forking, first connections, first queries) is not inside the
first measurement.

Alone: a small campaign (`--small` rows, default 200) of organization B is handed to the pool; timed from the
hand-off to its last SMTP acceptance. Contended: a large campaign (`--rows`, default 20,000) of organization A is
handed to the pool, and after `--settle` seconds the same small campaign again (new recipients); timed the same.
The contended figure counts only if the large send was still going when the small one finished.

Printed: the load average (`uptime`) before and after, the warm-up, alone and contended times, how much of the
large campaign was sent by then, and the ratio contended ÷ alone against the target: ≤ 2 (the pool serves
organizations round-robin). A miss is printed as a miss.
Run: `.venv/bin/python bench/pool_fairness.py` (a few minutes on a 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BASE_DIR, Processes, Sink, base_env, free_port, recreate_database, setup_django, write_json

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_fairness"
TARGET_RATIO = 2.0


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", default=DEFAULT_DB)
    p.add_argument("--rows", type=int, default=20_000, help="rows of the large campaign")
    p.add_argument("--small", type=int, default=200, help="rows of the small campaign")
    p.add_argument("--warmup", type=int, default=200, help="rows of each organization's warm-up campaign")
    p.add_argument(
        "--settle", type=float, default=3.0, help="seconds between the large and the small hand-off"
    )
    p.add_argument("--rate", type=float, default=0.0, help="DELIVERY_CAMPAIGN_RATE (0: pacing off)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--json", default=str(BASE_DIR / "var" / "bench" / "pool_fairness.json"))
    return p.parse_args()


@dataclass
class Campaign:
    """A campaign's template and contacts, made ahead; its send rows are created when it is handed over."""

    org: Any
    prefix: str
    template_id: str
    contacts: list[Any]


def prepare(org, prefix: str, size: int) -> Campaign:
    """A new campaign of `org` with `size` contacts (no send rows yet: rows waiting in the database are the
    pool's to take, so they exist only from the hand-off on)."""
    from owlat.models import Contact
    from templates.models import EmailTemplate

    template = EmailTemplate.objects.create(
        organization=org,
        name=prefix,
        subject="Hello {{firstName}}",
        html_content="<p>Hello {{firstName}}</p>",
    )
    contacts = Contact.objects.bulk_create(
        [Contact(organization=org, email=f"{prefix}{i:06d}@example.com") for i in range(size)],
        batch_size=2000,
    )
    return Campaign(org, prefix, str(template.pk), contacts)


def hand_to_pool(campaign: Campaign) -> None:
    """The campaign walk's hand-off: the rows are created through `create_batch` and enqueued on the pool in
    one transaction."""
    from django.db import transaction

    from delivery.services import CampaignRecipient, CampaignSendContext, create_batch

    org = campaign.org
    with transaction.atomic():
        create_batch(
            organization_id=org.pk,
            campaign_id=str(uuid.uuid4()),
            context=CampaignSendContext(
                from_email=f"news@{org.name.lower()}.test", from_name=org.name, topic_id=None
            ),
            sends=[
                CampaignRecipient(
                    contact_id=str(c.pk),
                    email=c.email,
                    first_name="",
                    last_name="",
                    email_template_id=campaign.template_id,
                )
                for c in campaign.contacts
            ],
        )


def wait_all(sink: Sink, prefix: str, n: int, timeout: float) -> float:
    """Seconds until `n` recipients starting with `prefix` were accepted (from now); the time of the last."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = sink.dump()
        got = [ts for ts, rcpt in rows if rcpt.startswith(prefix)]
        if len({r for _, r in rows if r.startswith(prefix)}) >= n:
            return max(got)
        time.sleep(0.2)
    raise TimeoutError(f"{prefix}: not all {n} arrived within {timeout:g}s")


def uptime() -> str:
    """The machine's `uptime` line (load averages; other processes may be running)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def timed(sink: Sink, campaign: Campaign, timeout: float) -> float:
    """Seconds from handing `campaign` to the pool to the last of its recipients accepted by the sink."""
    started = time.time()
    hand_to_pool(campaign)
    return wait_all(sink, campaign.prefix, len(campaign.contacts), timeout) - started


def measure(sink: Sink, rows: dict[str, Campaign], args: argparse.Namespace) -> dict:
    """The warm-up, alone and contended phases against a running cluster."""
    warmup_s = [timed(sink, rows[prefix], args.timeout) for prefix in ("warmupb", "warmupa")]
    alone_s = timed(sink, rows["alone"], args.timeout)
    large_started = time.time()
    hand_to_pool(rows["large"])
    time.sleep(args.settle)
    started = time.time()
    contended_s = timed(sink, rows["contended"], args.timeout)
    large_by_then = sum(1 for ts, r in sink.dump() if r.startswith("large") and ts <= started + contended_s)
    large_s = wait_all(sink, "large", args.rows, args.timeout) - large_started
    ratio = contended_s / alone_s if alone_s > 0 else float("nan")
    during = large_by_then < args.rows
    return {
        "warmup_seconds": warmup_s,
        "alone_seconds": alone_s,
        "contended_seconds": contended_s,
        "ratio": ratio,
        "large_sent_by_then": large_by_then,
        "large_seconds": large_s,
        "large_rows_per_second": args.rows / large_s if large_s > 0 else None,
        "during_large_send": during,
        "met": during and ratio <= TARGET_RATIO,
    }


def report(result: dict, args: argparse.Namespace) -> None:
    warm = ", ".join(f"{s:.2f}s" for s in result["warmup_seconds"])
    print(f"Warm-up ({args.warmup} rows per organization, first includes cluster start-up): {warm}")
    print(f"Small campaign ({args.small} rows) alone: {result['alone_seconds']:.2f}s")
    print(
        f"Small campaign during a {args.rows:,}-row send of another organization: "
        f"{result['contended_seconds']:.2f}s ({result['large_sent_by_then']:,} of the large one sent by then; "
        f"the large one took {result['large_seconds']:.1f}s, {result['large_rows_per_second']:.0f} rows/s)"
    )
    if not result["during_large_send"]:
        print("The large send had finished before the small one: the contended figure is not a measurement.")
    verdict = "met" if result["met"] else "MISSED"
    print(f"Ratio contended ÷ alone: {result['ratio']:.2f} (target ≤ {TARGET_RATIO:g}: {verdict})")


def main() -> int:
    args = parse_args()
    before = uptime()
    print(f"Preparing database {args.database} … ({before})", flush=True)
    recreate_database(args.database)
    sink = Sink(free_port())
    extra = {"EMAIL_PROVIDER": "smtp", "EMAIL_URL": sink.url, "DELIVERY_CAMPAIGN_RATE": str(args.rate)}
    extra["Q_POLL"] = "0.02"
    setup_django(args.database, **extra)
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    from testsupport.world import sending_organization

    large_org = sending_organization("Large", "large.test", sender="news", postal_address="Large Inc.")
    small_org = sending_organization("Small", "small.test", sender="news", postal_address="Small Inc.")
    rows = {
        "warmupb": prepare(small_org, "warmupb", args.warmup),
        "warmupa": prepare(large_org, "warmupa", args.warmup),
        "alone": prepare(small_org, "alone", args.small),
        "large": prepare(large_org, "large", args.rows),
        "contended": prepare(small_org, "contended", args.small),
    }
    procs = Processes(base_env(args.database, **extra), BASE_DIR / "var" / "bench" / "logs-fairness")
    procs.start("campaign", ["qcluster"], Q_CLUSTER_NAME="campaign")
    try:
        result = measure(sink, rows, args)
        procs.check_alive()
    finally:
        procs.stop()
        sink.stop()
    after = uptime()
    report(result, args)
    print(f"Load before: {before}\nLoad after:  {after}")
    write_json(
        args.json,
        {
            **result,
            "uptime_before": before,
            "uptime_after": after,
            "load_average_end": os.getloadavg(),
            "large_rows": args.rows,
            "small_rows": args.small,
            "warmup_rows": args.warmup,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
