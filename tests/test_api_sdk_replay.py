"""API-35 checks 9–12 (events, transactional, idempotent transactional sends) replayed over live HTTP with the
official SDK's request shapes (`tests/test_api_compat.py` replays 1–8, 13 and 14 the same way)."""

import re

import pytest

from delivery.models import TransactionalSend
from owlat.models import Contact, Domain
from templates.models import TransactionalEmail
from tests.test_api_compat import SDK_SCOPES, Sdk
from testsupport.api import make_key, make_org, refill_bucket

ID = re.compile(r"^[A-Za-z0-9_-]+$")
pytestmark = pytest.mark.django_db(transaction=True)


def test_api35_checks_9_to_12(live_server, settings):
    settings.EMAIL_PROVIDER = "smtp"
    settings.EMAIL_URL = "smtp://127.0.0.1:2525"
    org = make_org("Replay", default_from_email="hello@replay.example.com", default_from_name="Replay")
    Domain.objects.create(organization=org, domain="replay.example.com", status="verified")
    key, raw = make_key(org, scopes=SDK_SCOPES, name="K")
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
    Contact.objects.create(organization=org, email="jane@example.com", first_name="Jane")
    sdk = Sdk(live_server.url, raw)

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
    refill_bucket(key)
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
    refill_bucket(key)
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
