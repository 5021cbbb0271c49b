"""The pytest plugin the root `conftest.py` registers: the fixtures `smtp_sink`, `workers` (with `worker_env`),
`http_receiver` and `dns_stand_in`, and the `worker_env` marker."""

from testsupport.dns import dns_stand_in
from testsupport.http import http_receiver
from testsupport.smtp import smtp_sink
from testsupport.workers import pytest_configure, supervised_workers, worker_env, workers

__all__ = [
    "dns_stand_in",
    "http_receiver",
    "pytest_configure",
    "smtp_sink",
    "supervised_workers",
    "worker_env",
    "workers",
]
