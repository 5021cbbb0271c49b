"""`manage.py retry_failed_agent_actions`: what the 5-minute cron does (AGT-24), on demand."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from inbox.retry import failed_actions_retry
from inbox.walker import stale_steps_resume


class Command(BaseCommand):
    help = "Retry failed agent actions below the attempt cap and resume steps whose task was lost."

    def handle(self, *args: Any, **options: Any) -> None:
        retried = failed_actions_retry()
        resumed = stale_steps_resume()
        self.stdout.write(f"retried {retried} failed action(s); resumed {resumed} lost step(s)")
