"""`manage.py backfill_campaign_stats`: recompute campaign `stats_*` from send rows. A dry run unless `--apply`;
pk batches with a progress bar; `--after <id>` resumes; ends with a summary."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from tqdm import tqdm

from campaigns.models import Campaign
from campaigns.operations import campaign_stats_backfill


class Command(BaseCommand):
    help = "Recompute campaign counters from send rows (dry run unless --apply)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--apply", action="store_true", help="Write the corrected counters.")
        parser.add_argument("--batch-size", type=int, default=100)
        parser.add_argument("--after", default=None, help="Resume after this campaign id.")

    def handle(self, *args: Any, **options: Any) -> None:
        apply = options["apply"]
        total = Campaign.objects.count()
        with tqdm(total=total, unit="campaign", file=self.stderr, disable=total == 0) as bar:
            report = campaign_stats_backfill(
                apply=apply, batch_size=options["batch_size"], after=options["after"], progress=bar.update
            )
        for line in report.differences[:50]:
            self.stdout.write(line)
        mode = "applied" if apply else "dry run (use --apply to write)"
        self.stdout.write(
            f"Summary ({mode}): {report.campaigns} campaigns checked; {report.changed} with wrong counters; "
            f"last id {report.last_id or '-'}"
        )
