"""`manage.py run_due_tasks`: the small long-running dispatcher of due-task rows (spec D-05)."""

from __future__ import annotations

import signal
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections

from owlat.jobs import QUEUES, dispatch_due_tasks, enqueue, heartbeat

HEARTBEAT_EVERY_SECONDS = 10.0


class Command(BaseCommand):
    help = "Hand due-task rows (retries, delays, undo windows) to django-q2 when they come due."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--once", action="store_true", help="Dispatch what is due now and exit.")
        parser.add_argument("--name", default="dispatcher", help="Name for the heartbeat row.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["once"]:
            count = dispatch_due_tasks()
            self.stdout.write(f"dispatched {count} due task(s)")
            return
        self._stop = False
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        poll = settings.DUE_TASK_POLL_SECONDS
        last_beat = 0.0
        self.stdout.write(f"due-task dispatcher polling every {poll:.2f}s")
        while not self._stop:
            close_old_connections()
            if time.monotonic() - last_beat >= HEARTBEAT_EVERY_SECONDS:
                heartbeat(options["name"])
                for queue in QUEUES:
                    enqueue("owlat.jobs.heartbeat_task", f"queue:{queue}", queue=queue)
                last_beat = time.monotonic()
            handed = dispatch_due_tasks()
            if handed:
                continue
            time.sleep(poll)

    def _request_stop(self, *_: Any) -> None:
        self._stop = True
