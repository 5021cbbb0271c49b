"""`manage.py backfill_automation_stats`: recompute the run counters (AUT-05) and per-step counters (AUT-02) from
the rows. A dry run unless `--apply`; pk batches with progress; `--after <id>` resumes; ends with a summary."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from automations.services import automation_stats_backfill


class Command(BaseCommand):
    help = "Recompute automation counters from runs and step runs (dry run unless --apply)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--apply", action="store_true", help="Write the corrected counters.")
        parser.add_argument("--batch-size", type=int, default=100)
        parser.add_argument("--after", default=None, help="Resume after this automation id.")

    def handle(self, *args: Any, **options: Any) -> None:
        apply = options["apply"]
        report = automation_stats_backfill(
            apply=apply,
            batch_size=options["batch_size"],
            after=options["after"],
            progress=lambda line: self.stdout.write(line),
        )
        mode = "applied" if apply else "dry run (use --apply to write)"
        self.stdout.write(
            f"Summary ({mode}): {report.automations} automations checked; {report.changed} with wrong run "
            f"counters; {report.steps_changed} steps with wrong step counters; last id {report.last_id or '-'}"
        )
