"""Test support, kept outside the production packages: a loopback SMTP sink with fault injection
(`testsupport.smtp`), real worker processes (`testsupport.workers`), a recording HTTP server
(`testsupport.http`), an in-process runner for queued django-q2 tasks (`testsupport.queue`), API helpers
(`testsupport.api`), racing callers (`testsupport.race`) and the worlds tests and benchmarks build alike
(`testsupport.world`).

Registered as a pytest plugin by the root `conftest.py` (`pytest_plugins = ["testsupport.plugin"]`), so the
fixtures `smtp_sink`, `workers` and `http_receiver` are available everywhere. The benchmarks under `bench/`
import from here too. Nothing here is imported by production code; Django models are imported lazily, inside
functions, because pytest loads the plugin before Django is set up.
"""

from testsupport.http import HttpReceiver, RecordedRequest, Reply
from testsupport.queue import DrainedTask, QueuedTask, clear_queue, drain_queue, queued_tasks, run_due_retry
from testsupport.race import race
from testsupport.smtp import ReceivedMessage, SmtpAttempt, SmtpSink
from testsupport.waiting import free_port, wait_until
from testsupport.workers import BASE_DIR, WorkerSet, database_url_for_tests, worker_environment

__all__ = [
    "BASE_DIR",
    "DrainedTask",
    "HttpReceiver",
    "QueuedTask",
    "ReceivedMessage",
    "RecordedRequest",
    "Reply",
    "SmtpAttempt",
    "SmtpSink",
    "WorkerSet",
    "clear_queue",
    "database_url_for_tests",
    "drain_queue",
    "free_port",
    "queued_tasks",
    "race",
    "run_due_retry",
    "wait_until",
    "worker_environment",
]
