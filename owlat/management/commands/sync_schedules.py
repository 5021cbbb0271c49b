"""`manage.py sync_schedules`: upsert every app's declared periodic jobs as django-q2 schedules (D-05)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from owlat.schedules import sync_schedules


class Command(BaseCommand):
    help = "Create/update the django-q2 cron schedules declared in <app>/schedules.py; remove stale ones."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Show what would change; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        summary = sync_schedules(dry_run=options["dry_run"])
        for line in summary.lines():
            self.stdout.write(line)
