"""`manage.py process_pending_delays`: run the AUT-29 recovery sweep once (the cron runs it every 5 minutes)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from automations.walker import PENDING_DELAYS_BATCH, pending_delays_process


class Command(BaseCommand):
    help = "Re-dispatch pending automation steps whose delay has passed (lost scheduling recovery)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--batch-size", type=int, default=PENDING_DELAYS_BATCH)

    def handle(self, *args: Any, **options: Any) -> None:
        count = pending_delays_process(batch=options["batch_size"])
        self.stdout.write(f"dispatched {count} pending step runs")
