"""API-35 replayable SDK checks, replayed in order over real HTTP against a live server.

Covers checks 1–8 and 13–14 (the contacts, topic-membership, rate-limit and health surface). Checks 9–12
(events, transactional, idempotent transactional sends) belong to the events and transactional endpoints
and are replayed with them.

Requests are sent like the SDKs send them: `Authorization: Bearer <key>` and `Content-Type: application/json`
on every request (GET and DELETE included), paths without a trailing slash unless the check says otherwise,
`{idOrEmail}` percent-encoded. Before each check the key's bucket is refilled so that only check 13 measures
the rate limiter (the replay itself issues requests faster than 10 per second).
"""

import re
import threading
import time

import pytest
import requests

from owlat.api import auth
from owlat.models import Contact, ContactTopic, Domain, Topic
from testsupport.api import make_key, make_org, refill_bucket

ID = re.compile(r"^[A-Za-z0-9_-]+$")
TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SDK_SCOPES = ["contacts:read", "contacts:write", "events:write", "transactional:send", "topics:write"]

pytestmark = pytest.mark.django_db(transaction=True)


class Sdk:
    """What `@owlat/sdk-js` / `owlat-sdk` put on the wire."""

    def __init__(self, base_url, key=None):
        self.base = f"{base_url}/api/v1"
        self.key = key
        self.session = requests.Session()

    def call(self, method, path, body=None, *, key="default", params=None, headers=None):
        all_headers = {"Content-Type": "application/json"}
        key = self.key if key == "default" else key
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        all_headers.update(headers or {})
        import json

        data = json.dumps(body).encode() if body is not None else None
        return requests.request(
            method,
            self.base + path,
            data=data,
            headers=all_headers,
            params=params,
            allow_redirects=False,
            timeout=30,
        )


def no_rate_headers(response):
    return not any(name.lower().startswith("x-ratelimit") for name in response.headers)


def assert_contact(data, *, email, first_name=None, last_name=None):
    assert set(data) == {"id", "email", "firstName", "lastName", "source", "createdAt", "updatedAt"}
    assert ID.match(data["id"]) and "@" not in data["id"]
    assert data["email"] == email
    assert data["firstName"] == first_name and data["lastName"] == last_name
    assert data["source"] == "api"
    assert TS.match(data["createdAt"]) and TS.match(data["updatedAt"])


def test_api35_checks_1_to_8_13_and_14(live_server, monkeypatch):
    # --- set-up: organization with a verified domain and a default sender; keys K and R; topics TD and TO ---
    org = make_org("Compat", default_from_email="hello@compat.example.com", default_from_name="Compat")
    Domain.objects.create(organization=org, domain="compat.example.com", status="verified")
    key_k, raw_k = make_key(org, scopes=SDK_SCOPES, name="K")
    _, raw_r = make_key(org, scopes=["contacts:read"], name="R")
    td = Topic.objects.create(organization=org, name="TD", require_double_opt_in=True)
    to = Topic.objects.create(organization=org, name="TO", require_double_opt_in=False)
    foreign_topic = Topic.objects.create(organization=make_org("Elsewhere"), name="Foreign")
    sdk = Sdk(live_server.url, raw_k)

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

    # --- 13. 30 concurrent list calls: at least one 429 ----------------------------------------------------
    # The limiter's clock is held still during the burst so that a slow or busy machine cannot refill the
    # bucket while the 30 requests are served: exactly the 15 tokens of burst capacity are available.
    refill_bucket(key_k)
    frozen = time.time()
    monkeypatch.setattr(auth, "clock", lambda: frozen)
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
        assert int(r.headers["X-RateLimit-Reset"]) >= int(frozen)
    assert len(limited) == 15  # 15 tokens of burst, no refill while the clock stands still
    monkeypatch.undo()
    time.sleep(2)

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
