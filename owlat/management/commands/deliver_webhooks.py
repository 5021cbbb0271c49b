"""`manage.py deliver_webhooks`: operator tools for customer webhook deliveries (DOM-18)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand
from django.utils import timezone

from owlat.webhooks import webhook_deliveries_recover_task, webhook_deliveries_retry_failed


class Command(BaseCommand):
    help = (
        "Re-enqueue overdue pending webhook deliveries; with --retry-failed, give failed deliveries a new round "
        "of attempts (dry run unless --apply)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--retry-failed", action="store_true", help="Reopen failed deliveries.")
        parser.add_argument("--organization", help="Only this organization id (with --retry-failed).")
        parser.add_argument("--since-hours", type=float, help="Only deliveries created in the last N hours.")
        parser.add_argument("--apply", action="store_true", help="Really reopen (default: dry run).")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["retry_failed"]:
            self.stdout.write(webhook_deliveries_recover_task())
            return
        since = None
        if options["since_hours"] is not None:
            since = timezone.now() - dt.timedelta(hours=options["since_hours"])
        count = webhook_deliveries_retry_failed(
            organization_id=options["organization"], since=since, apply=options["apply"]
        )
        if options["apply"]:
            self.stdout.write(f"reopened {count} failed webhook deliveries")
        else:
            self.stdout.write(f"dry run: {count} failed webhook deliveries would be reopened (use --apply)")
