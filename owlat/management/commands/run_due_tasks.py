"""`manage.py run_due_tasks`: the small long-running dispatcher of due-task rows (spec D-05); it also runs the
recovery sweeps outside the worker queues."""

from __future__ import annotations

import logging
import signal
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection

from owlat.clusters import stamped
from owlat.jobs import QUEUES, dispatch_due_tasks, enqueue, heartbeat, run_sweeps

logger = logging.getLogger(__name__)

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
        self._say = stamped(self.stdout.write)
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        poll = settings.DUE_TASK_POLL_SECONDS
        self._last_beat = 0.0
        self._last_sweep = time.monotonic()
        self.stdout.write(f"due-task dispatcher polling every {poll:.2f}s")
        while not self._stop:
            try:
                handed = self._round(options["name"])
            except Exception:  # the database went away (restart, terminated backend): retry shortly
                logger.exception("due-task dispatcher round failed; retrying")
                connection.close()
                time.sleep(1.0)
                continue
            if not handed:
                time.sleep(poll)

    def _round(self, name: str) -> int:
        close_old_connections()
        if time.monotonic() - self._last_beat >= HEARTBEAT_EVERY_SECONDS:
            heartbeat(name)
            for queue in QUEUES:
                enqueue("owlat.jobs.heartbeat_task", f"queue:{queue}", queue=queue)
            self._last_beat = time.monotonic()
        if time.monotonic() - self._last_sweep >= settings.QUEUE_SWEEP_SECONDS:
            # recovery that must not wait in a queue that may be stalled
            for sweep, summary in run_sweeps().items():
                if any(ch in summary for ch in "123456789"):
                    self._say(f"sweep {sweep}: {summary}")
            self._last_sweep = time.monotonic()
        return dispatch_due_tasks()

    def _request_stop(self, *_: Any) -> None:
        self._stop = True
