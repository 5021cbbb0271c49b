"""Idempotency-Key (API-11)."""

import datetime as dt
import threading
import time

import pytest
import requests
from django.urls import include, path
from django.utils import timezone

from owlat.api.base import ApiView
from owlat.api.idempotency import idempotency_purge_task, request_fingerprint
from owlat.models import Contact, IdempotencyRecord, RateBucket
from testsupport.api import ApiClient, error_of, make_key

CALLS = {"flaky": 0, "slow": 0}


class FlakyView(ApiView):
    """Fails with a 5xx on the first call, succeeds afterwards (writes a contact each time it runs)."""

    required_scopes = {"POST": "contacts:write"}
    empty_body_methods = frozenset({"POST"})

    def post(self, request):
        CALLS["flaky"] += 1
        Contact.objects.create(
            organization_id=self.organization_id, email=f"flaky{CALLS['flaky']}@example.com"
        )
        if CALLS["flaky"] == 1:
            return self.ok({"failed": True}, status=503)
        return self.created({"call": CALLS["flaky"]})


class SlowView(ApiView):
    required_scopes = {"POST": "contacts:write"}
    empty_body_methods = frozenset({"POST"})

    def post(self, request):
        CALLS["slow"] += 1
        Contact.objects.create(organization_id=self.organization_id, email=f"slow{CALLS['slow']}@example.com")
        time.sleep(1.5)
        return self.created({"call": CALLS["slow"]})


urlpatterns = [
    path(
        "api/v1/", include([path("_test/flaky", FlakyView.as_view()), path("_test/slow", SlowView.as_view())])
    ),
    path("", include("owlat.urls")),
]

pytestmark = pytest.mark.urls(__name__)


def idem(value):
    return {"Idempotency-Key": value}


@pytest.mark.django_db
def test_same_key_and_body_replays_the_stored_response(api, key):
    first = api.post("/contacts", {"email": "jane@example.com", "firstName": "Jane"}, headers=idem("k1"))
    assert first.status_code == 201
    assert not first.has_header("Idempotent-Replayed")
    # key order and whitespace do not change the fingerprint; nor does one trailing slash
    second = api.post(
        "/contacts/", raw=b'{ "firstName" : "Jane", "email": "jane@example.com" }', headers=idem("k1")
    )
    assert second.status_code == 201
    assert second.json() == first.json()
    assert second["Idempotent-Replayed"] == "true"
    assert Contact.objects.filter(email="jane@example.com").count() == 1
    assert second["X-RateLimit-Limit"] == "10"
    # a replay counts against the rate limit: with an empty bucket it is refused like any request
    RateBucket.objects.filter(key=f"api:{key[0].pk}").update(tokens=0.0, updated_at=time.time() + 5)
    limited = api.post("/contacts", {"email": "jane@example.com", "firstName": "Jane"}, headers=idem("k1"))
    assert limited.status_code == 429


@pytest.mark.django_db
def test_different_request_with_the_same_key_is_422(api):
    api.post("/contacts", {"email": "jane@example.com"}, headers=idem("k1"))
    for method_path, body in (
        ("/contacts", {"email": "other@example.com"}),
        ("/topics", {"email": "jane@example.com"}),
    ):
        response = api.post(method_path, body, headers=idem("k1"))
        assert response.status_code == 422
        assert response.json() == {
            "error": {
                "category": "invalid_state",
                "message": "Idempotency-Key was already used with a different request",
                "data": {"reason": "idempotency_key_reused"},
            }
        }
    assert not Contact.objects.filter(email="other@example.com").exists()


@pytest.mark.django_db
def test_4xx_responses_are_stored_and_replayed(api):
    api.post("/contacts", {"email": "jane@example.com"})
    conflict = api.post("/contacts", {"email": "jane@example.com"}, headers=idem("dup"))
    assert conflict.status_code == 409
    replay = api.post("/contacts", {"email": "jane@example.com"}, headers=idem("dup"))
    assert replay.status_code == 409 and replay["Idempotent-Replayed"] == "true"
    assert replay.json() == conflict.json()
    record = IdempotencyRecord.objects.get(key="dup")
    assert record.completed and record.response_status == 409


@pytest.mark.django_db
def test_keys_are_per_api_key(org, api):
    _, other_raw = make_key(org)
    assert api.post("/contacts", {"email": "a@example.com"}, headers=idem("same")).status_code == 201
    response = ApiClient(other_raw).post("/contacts", {"email": "b@example.com"}, headers=idem("same"))
    assert response.status_code == 201 and not response.has_header("Idempotent-Replayed")


@pytest.mark.django_db
def test_in_progress_claim_is_409_and_abandoned_claim_is_taken_over(api, key):
    fingerprint = request_fingerprint(
        method="POST", path="/api/v1/contacts", body=b'{"email": "jane@example.com"}'
    )
    record = IdempotencyRecord.objects.create(api_key=key[0], key="busy", fingerprint=fingerprint)
    response = api.post("/contacts", {"email": "jane@example.com"}, headers=idem("busy"))
    assert response.status_code == 409
    assert response["Retry-After"] == "1"
    error = error_of(response)
    assert error["category"] == "conflict" and error["data"] == {"reason": "idempotency_in_progress"}
    assert not Contact.objects.exists()
    # older than 60 s: the first request is gone; this one runs
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        created_at=timezone.now() - dt.timedelta(seconds=61)
    )
    response = api.post("/contacts", {"email": "jane@example.com"}, headers=idem("busy"))
    assert response.status_code == 201
    assert Contact.objects.count() == 1
    assert IdempotencyRecord.objects.get(pk=record.pk).completed


@pytest.mark.django_db
def test_5xx_releases_the_claim_and_rolls_back(api):
    CALLS["flaky"] = 0
    failed = api.post("/_test/flaky", {"x": 1}, headers=idem("f1"))
    assert failed.status_code == 503
    assert not IdempotencyRecord.objects.filter(key="f1").exists()
    assert not Contact.objects.filter(email="flaky1@example.com").exists()  # rolled back
    retried = api.post("/_test/flaky", {"x": 1}, headers=idem("f1"))
    assert retried.status_code == 201 and retried.json() == {"data": {"call": 2}}
    replay = api.post("/_test/flaky", {"x": 1}, headers=idem("f1"))
    assert replay.json() == {"data": {"call": 2}} and replay["Idempotent-Replayed"] == "true"
    assert CALLS["flaky"] == 2
    assert Contact.objects.filter(email__startswith="flaky").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["", "x" * 256, "schlüssel", "tab\there"])
def test_invalid_header_is_400(api, value):
    response = api.post("/contacts", {"email": "jane@example.com"}, headers=idem(value))
    assert response.status_code == 400
    assert error_of(response)["message"] == "Invalid Idempotency-Key header"
    assert not Contact.objects.exists()


@pytest.mark.django_db
def test_header_checked_after_scope_and_before_body(org):
    _, raw = make_key(org, scopes=["contacts:read"])
    response = ApiClient(raw).post("/contacts", raw=b"nope", headers=idem(""))
    assert response.status_code == 403
    _, raw = make_key(org)
    response = ApiClient(raw).post("/contacts", raw=b"nope", headers=idem(""))
    assert error_of(response)["message"] == "Invalid Idempotency-Key header"
    ok_key = ApiClient(raw).post("/contacts", raw=b"nope", headers=idem("k"))
    assert error_of(ok_key)["message"] == "Invalid JSON in request body"


@pytest.mark.django_db
def test_only_post_is_idempotent(api):
    assert api.get("/contacts", headers=idem("")).status_code == 200
    assert not IdempotencyRecord.objects.exists()


@pytest.mark.django_db
def test_records_expire_after_24_hours(api, key):
    api.post("/contacts", {"email": "jane@example.com"}, headers=idem("old"))
    api.post("/contacts", {"email": "bob@example.com"}, headers=idem("new"))
    IdempotencyRecord.objects.filter(key="old").update(created_at=timezone.now() - dt.timedelta(hours=25))
    # an expired record no longer binds the key
    response = api.post("/contacts", {"email": "carl@example.com"}, headers=idem("old"))
    assert response.status_code == 201
    IdempotencyRecord.objects.filter(key="old").update(created_at=timezone.now() - dt.timedelta(hours=25))
    assert idempotency_purge_task() == "purged 1 idempotency records"
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_run_once(live_server, org, key):
    """A second request while the first still runs gets 409; afterwards the stored response; one write."""
    CALLS["slow"] = 0
    url = f"{live_server.url}/api/v1/_test/slow"
    headers = {
        "Authorization": f"Bearer {key[1]}",
        "Content-Type": "application/json",
        "Idempotency-Key": "c1",
    }
    results = {}

    def first():
        results["first"] = requests.post(url, data=b'{"a": 1}', headers=headers, timeout=30)

    thread = threading.Thread(target=first)
    thread.start()
    deadline = time.time() + 5
    while not IdempotencyRecord.objects.filter(key="c1").exists() and time.time() < deadline:
        time.sleep(0.02)
    during = requests.post(url, data=b'{"a": 1}', headers=headers, timeout=30)
    thread.join()
    after = requests.post(url, data=b'{"a":1}', headers=headers, timeout=30)
    assert results["first"].status_code == 201
    assert during.status_code == 409
    assert during.headers["Retry-After"] == "1"
    assert during.json()["error"]["data"] == {"reason": "idempotency_in_progress"}
    assert after.status_code == 201 and after.headers["Idempotent-Replayed"] == "true"
    assert after.json() == results["first"].json()
    assert CALLS["slow"] == 1
    assert Contact.objects.filter(email__startswith="slow").count() == 1


@pytest.mark.django_db
def test_purge_is_scheduled_hourly():
    from django_q.models import Schedule

    from owlat.schedules import collect_schedules, sync_schedules

    (spec,) = [s for s in collect_schedules() if s.name == "api.idempotency_purge"]
    assert spec.func_path == "owlat.api.idempotency.idempotency_purge_task"
    sync_schedules()
    row = Schedule.objects.get(name="owlat:api.idempotency_purge")
    assert row.func == "owlat.api.idempotency.idempotency_purge_task"
    assert row.schedule_type == Schedule.CRON and row.cron == "17 * * * *"
