"""Failed API-key lookups are throttled per client (owlat/lookup_throttle.py): past AUTH_FAILURE_BURST the
client is answered 429 with Retry-After before any lookup, in the API's error envelope; others are unaffected."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from owlat import lookup_throttle
from testsupport.api import error_of, make_key, make_org

pytestmark = pytest.mark.django_db


def get(key: str, **extra):
    return Client().get("/api/v1/contacts", HTTP_AUTHORIZATION=f"Bearer {key}", **extra)


def test_invalid_api_keys_are_throttled_per_client_before_any_lookup(settings):
    settings.AUTH_FAILURE_BURST = 3
    org = make_org()
    _, good = make_key(org, ["contacts:read"])
    wrong = "lm_live_" + "x" * 40
    assert [get(wrong).status_code for _ in range(3)] == [401, 401, 401]
    throttled = get(wrong)
    assert throttled.status_code == 429
    error = error_of(throttled)
    assert error["category"] == "rate_limited" and "invalid API keys" in error["message"]
    assert int(throttled["Retry-After"]) >= 1 and error["data"]["retryAfter"] == int(throttled["Retry-After"])
    with CaptureQueriesContext(connection) as queries:
        blocked = get(good)  # the right key too: the client is refused before its key is looked up
    assert blocked.status_code == 429 and len(queries) == 0
    assert get(good, REMOTE_ADDR="203.0.113.7").status_code == 200


def test_malformed_keys_cost_no_lookup_and_are_not_counted(settings):
    settings.AUTH_FAILURE_BURST = 1
    for _ in range(3):
        assert get("not-a-key").status_code == 401  # "Invalid API key format": no database, no bucket


def test_a_zero_rate_lifts_the_throttle(settings):
    settings.AUTH_FAILURE_BURST = 1
    settings.AUTH_FAILURE_RATE_PER_MINUTE = 0
    assert {get("lm_live_" + "y" * 40).status_code for _ in range(4)} == {401}


def test_the_remembered_block_ends_when_the_bucket_has_a_token_again(settings, rf):
    settings.AUTH_FAILURE_BURST = 1
    request = rf.get("/", REMOTE_ADDR="192.0.2.1")
    assert lookup_throttle.lookup_failed(request, now=100.0) is None
    wait = lookup_throttle.lookup_failed(request, now=100.0)
    assert wait is not None and wait >= 1
    assert lookup_throttle.lookup_refused(request, now=100.0) == wait
    assert lookup_throttle.lookup_refused(request, now=100.0 + wait) is None
