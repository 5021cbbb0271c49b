"""Recompute DLV-10 campaign counters from the send rows (dry run unless --apply; batches; progress; summary)."""

from django.core.management.base import BaseCommand

from delivery.backfill import backfill_send_counters


class Command(BaseCommand):
    help = "Recompute campaign send counters from the send rows' timestamps."

    def add_arguments(self, parser):
        parser.add_argument("--apply", action="store_true", help="write the counters (default: dry run)")
        parser.add_argument("--campaign", action="append", dest="campaigns", help="only this campaign id")
        parser.add_argument("--batch-size", type=int, default=1000)

    def handle(self, *args, **options):
        summary = backfill_send_counters(
            apply=options["apply"],
            campaign_ids=options["campaigns"],
            batch_size=options["batch_size"],
            out=self.stdout.write,
        )
        verb = "written" if options["apply"] else "dry run; use --apply to write"
        self.stdout.write(
            f"Summary: {summary.campaigns} campaign(s), {summary.rows} row(s) read, "
            f"{summary.changed} counter set(s) differ ({verb})"
        )
