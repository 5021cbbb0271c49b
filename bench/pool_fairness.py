#!/usr/bin/env python
"""Campaign pool fairness benchmark.

Setup (not timed): a fresh PostgreSQL database (`--database`, default
`postgres://postgres@127.0.0.1:5432/owlat_bench_fairness`), two organizations with verified sending domains,
one template each, a loopback SMTP sink (aiosmtpd) in its own process and a real `qcluster` for the campaign
pool (`DELIVERY_CAMPAIGN_RATE=--rate`, default 0: pacing off). Campaign rows are created through `create_batch`
and handed to the pool as the campaign walk hands them.

Alone: a small campaign (`--small` rows, default 200) of organization B is handed to the pool; timed from the
hand-off to its last SMTP acceptance. Contended: a large campaign (`--rows`, default 20,000) of organization A is
handed to the pool, and after `--settle` seconds the same small campaign again (new recipients); timed the same.

Printed: both times and their ratio contended ÷ alone. Target: ≤ 2 (the pool serves organizations round-robin).
Run: `.venv/bin/python bench/pool_fairness.py` (a few minutes on a 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BASE_DIR, Processes, Sink, base_env, free_port, recreate_database, setup_django, write_json

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/owlat_bench_fairness"
TARGET_RATIO = 2.0


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", default=DEFAULT_DB)
    p.add_argument("--rows", type=int, default=20_000, help="rows of the large campaign")
    p.add_argument("--small", type=int, default=200, help="rows of the small campaign")
    p.add_argument(
        "--settle", type=float, default=3.0, help="seconds between the large and the small hand-off"
    )
    p.add_argument("--rate", type=float, default=0.0, help="DELIVERY_CAMPAIGN_RATE (0: pacing off)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--json", default=str(BASE_DIR / "var" / "bench" / "pool_fairness.json"))
    return p.parse_args()


def campaign_rows(org, prefix: str, size: int) -> list[str]:
    """`size` rows of a new campaign of `org` (not handed to the pool yet); their send ids."""
    from delivery.services import CampaignRecipient, CampaignSendContext, create_batch
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
    domain = org.name.lower()
    created = create_batch(
        organization_id=org.pk,
        campaign_id=str(uuid.uuid4()),
        context=CampaignSendContext(from_email=f"news@{domain}.test", from_name=org.name, topic_id=None),
        sends=[
            CampaignRecipient(
                contact_id=str(c.pk),
                email=c.email,
                first_name="",
                last_name="",
                email_template_id=str(template.pk),
            )
            for c in contacts
        ],
        enqueue=False,
    )
    return [str(v) for v in created.values()]


def hand_to_pool(ids: list[str]) -> None:
    from django.db import transaction

    from delivery.services import sends_enqueue

    with transaction.atomic():
        sends_enqueue("campaign", ids)


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


def main() -> int:
    args = parse_args()
    print(f"Preparing database {args.database} … (load average {os.getloadavg()[0]:.1f})", flush=True)
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
    alone = campaign_rows(small_org, "alone", args.small)
    large = campaign_rows(large_org, "large", args.rows)
    contended = campaign_rows(small_org, "contended", args.small)
    procs = Processes(base_env(args.database, **extra), BASE_DIR / "var" / "bench" / "logs-fairness")
    procs.start("campaign", ["qcluster"], Q_CLUSTER_NAME="campaign")
    try:
        started = time.time()
        hand_to_pool(alone)
        alone_s = wait_all(sink, "alone", args.small, args.timeout) - started
        hand_to_pool(large)
        time.sleep(args.settle)
        started = time.time()
        hand_to_pool(contended)
        contended_s = wait_all(sink, "contended", args.small, args.timeout) - started
        large_by_then = sum(
            1 for ts, r in sink.dump() if r.startswith("large") and ts <= started + contended_s
        )
        wait_all(sink, "large", args.rows, args.timeout)
        procs.check_alive()
    finally:
        procs.stop()
        sink.stop()
    ratio = contended_s / alone_s if alone_s > 0 else float("nan")
    met = ratio <= TARGET_RATIO
    print(f"Small campaign ({args.small} rows) alone: {alone_s:.2f}s")
    print(
        f"Small campaign during a {args.rows:,}-row send of another organization: {contended_s:.2f}s "
        f"({large_by_then:,} of the large one sent by then)"
    )
    print(f"Ratio contended ÷ alone: {ratio:.2f} (target ≤ {TARGET_RATIO:g}: {'met' if met else 'MISSED'})")
    write_json(
        args.json,
        {
            "load_average_end": os.getloadavg(),
            "alone_seconds": alone_s,
            "contended_seconds": contended_s,
            "ratio": ratio,
            "large_rows": args.rows,
            "small_rows": args.small,
            "met": met,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
