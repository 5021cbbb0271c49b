"""Provider health (DLV-17): success and latency per provider, recorded per worker job (not per send) and shown
in the admin to platform staff."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from delivery import health
from delivery.models import ProviderHealth
from delivery.worker import dispatch_batch


@pytest.fixture(autouse=True)
def empty_tally():
    with health._state.lock:
        health._state.tallies.clear()


def test_tally_is_written_once_per_provider_and_minute(db):
    at = dt.datetime(2026, 11, 30, 12, 0, 10, tzinfo=dt.UTC)
    for latency, ok in ((40, True), (60, True), (200, False)):
        health.provider_health_record(
            provider="smtp",
            ok=ok,
            latency_ms=latency,
            attempts=1 if ok else 3,
            error_code=None if ok else "RATE_LIMIT",
            at=at,
        )
    with CaptureQueriesContext(connection) as queries:
        assert health.provider_health_flush() == 1
    assert len(queries) <= 4  # update (miss), savepoint, insert, release — not one write per send
    health.provider_health_record(provider="smtp", ok=True, latency_ms=20, attempts=1, at=at)
    health.provider_health_flush()
    row = ProviderHealth.objects.get(provider="smtp")
    assert (row.dispatches, row.succeeded, row.failed, row.attempts) == (4, 3, 1, 6)
    assert (row.latency_total_ms, row.latency_max_ms, row.last_error_code) == (320, 200, "RATE_LIMIT")
    [summary] = health.provider_health_summary(window=dt.timedelta(hours=1), now=at)
    assert summary.success_rate == 0.75 and summary.latency_avg_ms == 80


def test_worker_job_records_success_and_latency(org, make_tx_send, smtp_sink):
    sends = [make_tx_send() for _ in range(3)]
    smtp_sink.script_for(sends[2].email, ["550"])
    summary = dispatch_batch("transactional", [str(s.pk) for s in sends], pacer=lambda: None, drain=False)
    assert (summary.sent, summary.failed) == (2, 1)
    [row] = ProviderHealth.objects.filter(provider="smtp")
    assert (row.dispatches, row.succeeded, row.failed) == (3, 2, 1)
    assert row.last_error_code == "INVALID_RECIPIENT"
    assert row.latency_total_ms >= 0 and row.latency_max_ms >= row.latency_total_ms // 3


def test_admin_shows_provider_health_to_platform_staff(db, admin_client, django_user_model, client):
    now = dt.datetime.now(dt.UTC)
    health.provider_health_record(provider="smtp", ok=True, latency_ms=42, attempts=1, at=now)
    health.provider_health_flush()
    response = admin_client.get("/admin/delivery/providerhealth/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Provider health (DLV-17)" in page and "Last hour" in page
    assert "42 ms" in page and "100 %" in page
