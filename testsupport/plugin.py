"""The pytest plugin the root `conftest.py` registers: the fixtures `smtp_sink`, `workers` (with `worker_env`),
`http_receiver`, `dns_stand_in` and `staff_owner`, and the `worker_env` marker."""

from testsupport.admin import staff_owner
from testsupport.dns import dns_stand_in
from testsupport.http import http_receiver
from testsupport.smtp import smtp_sink
from testsupport.workers import pytest_configure, supervised_workers, worker_env, workers

__all__ = [
    "dns_stand_in",
    "http_receiver",
    "pytest_configure",
    "smtp_sink",
    "staff_owner",
    "supervised_workers",
    "worker_env",
    "workers",
]
