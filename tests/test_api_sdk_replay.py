"""API-35, the replayable SDK checks, replayed in order (1 … 14) over live HTTP with the request shapes of the
official SDKs (`@owlat/sdk-js`, `owlat-sdk`): against the web process exactly as `make run` serves it (gunicorn,
the Procfile's `web:` line) and against Django's live test server.

Requests are sent like the SDKs send them: `Authorization: Bearer <key>` and `Content-Type: application/json`
on every request (GET and DELETE included), paths without a trailing slash unless the check says otherwise,
`{idOrEmail}` percent-encoded. Before each check the key's bucket is refilled so that only check 13 measures
the rate limiter (the replay itself issues requests faster than 10 per second).

The SDKs call only the contacts, topic-membership, events and transactional endpoints (API-13 … API-22);
campaigns and the inbox are extension endpoints no SDK calls (their replays: `campaigns/tests/test_api.py`,
`inbox/tests/test_api.py`).
"""

import re
import threading
import time

import pytest

from delivery.models import TransactionalSend
from owlat.api.auth import bucket_key
from owlat.models import Contact, ContactTopic, Domain, RateBucket, Topic
from templates.models import TransactionalEmail
from testsupport.api import SDK_SCOPES, SdkClient, make_key, make_org, refill_bucket
from testsupport.web import serve_web

ID = re.compile(r"^[A-Za-z0-9_-]+$")
TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SMTP_SETTINGS = {"EMAIL_PROVIDER": "smtp", "EMAIL_URL": "smtp://127.0.0.1:2525"}

pytestmark = pytest.mark.django_db(transaction=True)


def no_rate_headers(response):
    return not any(name.lower().startswith("x-ratelimit") for name in response.headers)


def assert_contact(data, *, email, first_name=None, last_name=None):
    assert set(data) == {"id", "email", "firstName", "lastName", "source", "createdAt", "updatedAt"}
    assert ID.match(data["id"]) and "@" not in data["id"]
    assert data["email"] == email
    assert data["firstName"] == first_name and data["lastName"] == last_name
    assert data["source"] == "api"
    assert TS.match(data["createdAt"]) and TS.match(data["updatedAt"])


def hold_bucket(api_key, tokens: float, seconds: float) -> None:
    """Give the key's bucket `tokens` and set its clock `seconds` ahead: nothing refills until then, however
    slow the machine, so a burst meets exactly `tokens` tokens."""
    RateBucket.objects.update_or_create(
        key=bucket_key(api_key), defaults={"tokens": tokens, "updated_at": time.time() + seconds}
    )


def test_api35_replay_against_the_served_web_process(settings):
    settings.EMAIL_PROVIDER, settings.EMAIL_URL = SMTP_SETTINGS["EMAIL_PROVIDER"], SMTP_SETTINGS["EMAIL_URL"]
    with serve_web(SMTP_SETTINGS) as (url, _):
        replay_api35(url)


def test_api35_replay_against_the_live_test_server(live_server, settings):
    settings.EMAIL_PROVIDER, settings.EMAIL_URL = SMTP_SETTINGS["EMAIL_PROVIDER"], SMTP_SETTINGS["EMAIL_URL"]
    replay_api35(live_server.url)


def replay_api35(base_url):
    # --- set-up: a verified domain and a default sender; keys K and R; topics TD and TO; transactional emails ---
    org = make_org("Compat", default_from_email="hello@compat.example.com", default_from_name="Compat")
    Domain.objects.create(organization=org, domain="compat.example.com", status="verified")
    key_k, raw_k = make_key(org, scopes=SDK_SCOPES, name="K")
    _, raw_r = make_key(org, scopes=["contacts:read"], name="R")
    td = Topic.objects.create(organization=org, name="TD", require_double_opt_in=True)
    to = Topic.objects.create(organization=org, name="TO", require_double_opt_in=False)
    foreign_topic = Topic.objects.create(organization=make_org("Elsewhere"), name="Foreign")
    welcome = TransactionalEmail.objects.create(
        organization=org,
        slug="welcome",
        name="Welcome",
        subject="Welcome {{firstName}}",
        html_content="<p>Hi</p>",
    )
    TransactionalEmail.objects.filter(pk=welcome.pk).update(status="published")
    TransactionalEmail.objects.create(
        organization=org, slug="draft-mail", name="Draft", subject="Draft", html_content="<p>x</p>"
    )
    sdk = SdkClient(base_url, raw_k)

    # --- 1. authentication and scope -------------------------------------------------------------------------
    r = sdk.call("POST", "/contacts", {"email": "a@example.com"}, key=None)
    assert r.status_code == 401
    assert r.json() == {
        "error": {
            "category": "unauthenticated",
            "message": "Missing or invalid Authorization header. Use: Authorization: Bearer <api_key>",
        }
    }
    assert no_rate_headers(r)
    r = sdk.call("POST", "/contacts", {"email": "a@example.com"}, key="lm_test_key")
    assert r.status_code == 401
    assert r.json() == {"error": {"category": "unauthenticated", "message": "Invalid API key format"}}
    assert no_rate_headers(r)
    r = sdk.call("POST", "/events", {"email": "a@example.com", "eventName": "signup"}, key=raw_r)
    assert r.status_code == 403
    assert r.json() == {
        "error": {
            "category": "forbidden",
            "message": "This API key is missing the required scope: events:write",
        }
    }
    assert r.headers["X-RateLimit-Limit"] == "10"
    assert not Contact.objects.exists()

    # --- 2. create, then duplicate ---------------------------------------------------------------------------
    refill_bucket(key_k)
    r = sdk.call("POST", "/contacts", {"email": "Jane@Example.com", "firstName": "Jane"})
    assert r.status_code == 201
    assert r.headers["X-RateLimit-Limit"] == "10"
    jane = r.json()["data"]
    assert set(r.json()) == {"data"}
    assert_contact(jane, email="jane@example.com", first_name="Jane")
    r = sdk.call("POST", "/contacts", {"email": "Jane@Example.com", "firstName": "Jane"})
    assert r.status_code == 409
    assert r.json() == {
        "error": {"category": "already_exists", "message": "A contact with this email already exists"}
    }

    # --- 3. trailing slash, no redirect ----------------------------------------------------------------------
    refill_bucket(key_k)
    r = sdk.call("POST", "/contacts/", {"email": "bob@example.com"})
    assert r.status_code == 201, r.status_code
    bob = r.json()["data"]
    assert_contact(bob, email="bob@example.com")

    # --- 4. read by encoded email ------------------------------------------------------------------------
    refill_bucket(key_k)
    r = sdk.call("GET", "/contacts/jane%40example.com")
    assert r.status_code == 200
    assert r.json() == {"data": jane}
    r = sdk.call("GET", "/contacts/nobody%40example.com")
    assert r.status_code == 404
    assert r.json() == {"error": {"category": "not_found", "message": "Contact not found"}}

    # --- 5. partial update -----------------------------------------------------------------------------------
    refill_bucket(key_k)
    r = sdk.call("PUT", "/contacts/jane%40example.com", {"lastName": "Smith"})
    assert r.status_code == 200
    updated = r.json()["data"]
    assert_contact(updated, email="jane@example.com", first_name="Jane", last_name="Smith")
    assert updated["id"] == jane["id"]

    # --- 6. pagination -----------------------------------------------------------------------------------
    refill_bucket(key_k)
    r = sdk.call("GET", "/contacts", params={"limit": "1"})
    assert r.status_code == 200
    page1 = r.json()
    assert len(page1["data"]) == 1
    assert page1["pagination"]["limit"] == 1 and page1["pagination"]["totalItems"] == 2
    assert isinstance(page1["pagination"]["cursor"], str) and page1["pagination"]["isDone"] is False
    r = sdk.call("GET", "/contacts", params={"limit": "1", "cursor": page1["pagination"]["cursor"]})
    page2 = r.json()
    assert page2["pagination"] == {"limit": 1, "totalItems": 2, "cursor": None, "isDone": True}
    assert {page1["data"][0]["id"], page2["data"][0]["id"]} == {jane["id"], bob["id"]}
    r = sdk.call("GET", "/contacts", params={"limit": "0"})
    assert r.status_code == 400
    assert r.json()["error"]["category"] == "invalid_input"
    assert r.json()["error"]["message"] == "Invalid limit"

    # --- 7. topic membership -------------------------------------------------------------------------------
    refill_bucket(key_k)
    r = sdk.call("POST", f"/topics/{td.pk}/contacts", {"email": "jane@example.com"})
    assert r.status_code == 201
    assert r.json() == {
        "data": {"success": True, "contactId": jane["id"], "topicId": str(td.pk), "doiStatus": "pending"}
    }
    r = sdk.call("POST", f"/topics/{to.pk}/contacts", {"contactId": bob["id"]})
    assert r.status_code == 201
    assert r.json()["data"]["doiStatus"] == "not_required"
    r = sdk.call("POST", f"/topics/{foreign_topic.pk}/contacts", {"email": "jane@example.com"})
    assert r.status_code == 404
    assert r.json() == {"error": {"category": "not_found", "message": "Topic not found"}}

    # --- 8. removal -------------------------------------------------------------------------------------
    refill_bucket(key_k)
    r = sdk.call("DELETE", f"/topics/{td.pk}/contacts/jane%40example.com")
    assert r.status_code == 200
    assert r.json() == {"data": {"success": True, "removed": True}}
    r = sdk.call("DELETE", f"/topics/{td.pk}/contacts/jane%40example.com")
    assert r.json() == {"data": {"success": True, "removed": False}}
    assert not ContactTopic.objects.filter(topic=td).exists()

    # --- 9. events -----------------------------------------------------------------------------------------------
    r = sdk.call("POST", "/events", {"email": "new@example.com", "eventName": "signup"})
    assert r.status_code == 404
    assert r.json() == {
        "error": {
            "category": "not_found",
            "message": 'Contact with email "new@example.com" not found. Set createContactIfNotExists: true to '
            "create the contact automatically.",
        }
    }
    r = sdk.call(
        "POST",
        "/events",
        {"email": "new@example.com", "eventName": "signup", "createContactIfNotExists": True},
    )
    assert r.status_code == 201
    data = r.json()["data"]
    assert set(data) == {"eventId", "contactId", "eventName", "triggeredAutomations", "contactCreated"}
    assert data["eventId"].startswith("evt_") and ID.match(data["contactId"])
    assert (data["eventName"], data["triggeredAutomations"], data["contactCreated"]) == ("signup", 0, True)
    r = sdk.call("POST", "/events", {"email": "new@example.com", "eventName": "1bad"})
    assert r.status_code == 400 and r.json()["error"]["category"] == "invalid_input"

    # --- 10. a transactional send --------------------------------------------------------------------------------
    refill_bucket(key_k)
    body = {"email": "jane@example.com", "slug": "welcome", "dataVariables": {"firstName": "Jane"}}
    r = sdk.call("POST", "/transactional", body)
    assert r.status_code == 202
    data = r.json()["data"]
    assert set(data) == {
        "status",
        "email",
        "transactionalEmailId",
        "slug",
        "contactId",
        "contactCreated",
        "language",
    }
    assert (data["status"], data["email"], data["slug"], data["contactCreated"], data["language"]) == (
        "queued",
        "jane@example.com",
        "welcome",
        False,
        "en",
    )
    assert TransactionalSend.objects.filter(pk=data["transactionalEmailId"], status="queued").count() == 1

    # --- 11. refusals ---------------------------------------------------------------------------------------------
    r = sdk.call("POST", "/transactional", {"email": "jane@example.com", "slug": "draft-mail"})
    assert r.status_code == 422
    assert r.json() == {
        "error": {
            "category": "invalid_state",
            "message": 'Transactional email "draft-mail" is not published. Please publish it before sending.',
            "data": {"reason": "template_not_published"},
        }
    }
    r = sdk.call("POST", "/transactional", {"email": "jane@example.com"})
    assert (
        r.status_code == 400 and r.json()["error"]["message"] == "Either transactionalId or slug is required"
    )

    # --- 12. Idempotency-Key -------------------------------------------------------------------------------------
    refill_bucket(key_k)
    before = TransactionalSend.objects.count()
    first = sdk.call("POST", "/transactional", body, headers={"Idempotency-Key": "k1"})
    second = sdk.call("POST", "/transactional", body, headers={"Idempotency-Key": "k1"})
    assert first.status_code == second.status_code == 202
    assert first.json() == second.json()
    assert second.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert TransactionalSend.objects.count() == before + 1
    reused = sdk.call(
        "POST",
        "/transactional",
        {"email": "jane@example.com", "slug": "draft-mail"},
        headers={"Idempotency-Key": "k1"},
    )
    assert reused.status_code == 422 and reused.json()["error"]["data"]["reason"] == "idempotency_key_reused"

    # --- 13. 30 concurrent list calls: at least one 429 ----------------------------------------------------
    # The bucket holds its 15 tokens of burst with its clock ahead, so no refill happens while the 30 requests
    # are served, however busy the machine: exactly 15 answers are 429.
    before = int(time.time())
    hold_bucket(key_k, tokens=15, seconds=10)
    responses = []
    lock = threading.Lock()
    start = threading.Barrier(30)

    def call():
        start.wait()
        response = sdk.call("GET", "/contacts")
        with lock:
            responses.append(response)

    threads = [threading.Thread(target=call) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(responses) == 30
    limited = [r for r in responses if r.status_code == 429]
    assert limited, [r.status_code for r in responses]
    assert all(r.status_code in (200, 429) for r in responses)
    for r in limited:
        assert r.json() == {
            "error": {
                "category": "rate_limited",
                "message": "Rate limit exceeded. Maximum 10 requests per second.",
                "data": {"retryAfter": 1},
            }
        }
        assert r.headers["Retry-After"] == "1"
        assert r.headers["X-RateLimit-Remaining"] == "0"
        assert r.headers["X-RateLimit-Limit"] == "10"
        assert int(r.headers["X-RateLimit-Reset"]) >= before
    assert len(limited) == 15  # 15 tokens of burst, no refill while the bucket's clock is ahead
    time.sleep(2)
    refill_bucket(key_k)  # the bucket's clock is still ahead: start the next item from a full bucket

    # --- 14. erasure and health ---------------------------------------------------------------------------
    r = sdk.call("DELETE", "/contacts/jane%40example.com")
    assert r.status_code == 200
    assert r.json() == {"data": {"id": jane["id"], "deleted": True}}
    r = sdk.call("DELETE", "/contacts/jane%40example.com")
    assert r.status_code == 404
    r = sdk.call("GET", "/health", key=None)
    assert r.status_code == 200
    health = r.json()
    assert health["status"] == "ok" and TS.match(health["timestamp"])
    assert no_rate_headers(r)
