"""`manage.py reconcile_sending_campaigns`: the CMP-14 cron once (roll up counters, complete finished sends)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from campaigns.completion import reconcile_sending_campaigns


class Command(BaseCommand):
    help = "Roll up counters of sending campaigns and complete those whose sends have all left the queue."

    def handle(self, *args: Any, **options: Any) -> None:
        result = reconcile_sending_campaigns()
        self.stdout.write(
            f"reconciled {result['reconciled']} sending campaigns, completed {result['completed']}"
        )
