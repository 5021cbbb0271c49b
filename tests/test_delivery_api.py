"""Transactional API (API-22, API-32, DLV-14) including API-35 checks 10–12."""

from __future__ import annotations

import base64
import re
import uuid

import pytest

from delivery.models import SendAttachment, TransactionalSend
from owlat.models import Contact, Domain, DomainStatus
from templates.models import TransactionalEmail
from testsupport import queued_tasks
from testsupport.api import ApiClient, error_of, make_key, make_org

ID = re.compile(r"^[A-Za-z0-9_-]+$")
SCOPES = ["contacts:read", "contacts:write", "events:write", "transactional:send", "topics:write"]


@pytest.fixture
def setup(db, settings):
    settings.EMAIL_PROVIDER = "smtp"
    settings.EMAIL_URL = "smtp://127.0.0.1:2525"
    org = make_org(default_from_email="hello@acme.test", default_from_name="Acme")
    Domain.objects.create(organization=org, domain="acme.test", status=DomainStatus.VERIFIED)
    welcome = TransactionalEmail.objects.create(
        organization=org,
        slug="welcome",
        name="Welcome",
        subject="Welcome {{firstName}}",
        html_content="<p>Hello {{firstName}}, your code is {{code|'none'}}</p>",
        html_translations={"de": {"htmlContent": "<p>Hallo {{firstName}}</p>", "subject": "Willkommen"}},
    )
    TransactionalEmail.objects.filter(pk=welcome.pk).update(status="published")
    draft = TransactionalEmail.objects.create(
        organization=org, slug="draft-mail", name="Draft", subject="Draft", html_content="<p>x</p>"
    )
    Contact.objects.create(organization=org, email="jane@example.com", first_name="Jane")
    _, raw = make_key(org, SCOPES)
    _, reader = make_key(org, ["transactional:read"])
    return {
        "org": org,
        "welcome": TransactionalEmail.objects.get(pk=welcome.pk),
        "draft": draft,
        "api": ApiClient(raw),
        "reader": ApiClient(reader),
    }


def test_check_10_send_queues_one_row(setup):
    api = setup["api"]
    r = api.post(
        "/transactional",
        {"email": "jane@example.com", "slug": "welcome", "dataVariables": {"firstName": "Jane"}},
    )
    assert r.status_code == 202, r.content
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
    assert data["status"] == "queued" and data["email"] == "jane@example.com" and data["slug"] == "welcome"
    assert data["contactCreated"] is False and data["language"] == "en"
    assert ID.match(data["transactionalEmailId"]) and ID.match(data["contactId"])
    row = TransactionalSend.objects.get()
    assert (
        str(row.pk) == data["transactionalEmailId"] and row.status == "queued" and row.kind == "transactional"
    )
    assert row.subject == "Welcome Jane"
    assert [t.args for t in queued_tasks("transactional")] == [("transactional", [str(row.pk)])]


def test_check_11_unpublished_and_missing_template(setup):
    api = setup["api"]
    r = api.post("/transactional", {"email": "jane@example.com", "slug": "draft-mail"})
    assert r.status_code == 422
    assert r.json() == {
        "error": {
            "category": "invalid_state",
            "message": 'Transactional email "draft-mail" is not published. Please publish it before sending.',
            "data": {"reason": "template_not_published"},
        }
    }
    r = api.post("/transactional", {"email": "jane@example.com"})
    assert r.status_code == 400 and error_of(r)["message"] == "Either transactionalId or slug is required"
    assert not TransactionalSend.objects.exists()


def test_check_12_idempotency_key(setup):
    api = setup["api"]
    body = {"email": "jane@example.com", "slug": "welcome", "dataVariables": {"firstName": "Jane"}}
    first = api.post("/transactional", body, headers={"Idempotency-Key": "k1"})
    second = api.post("/transactional", body, headers={"Idempotency-Key": "k1"})
    assert first.status_code == second.status_code == 202
    assert first.json() == second.json()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert TransactionalSend.objects.count() == 1
    reused = api.post(
        "/transactional",
        {"email": "jane@example.com", "slug": "draft-mail"},
        headers={"Idempotency-Key": "k1"},
    )
    assert reused.status_code == 422 and error_of(reused)["data"]["reason"] == "idempotency_key_reused"


def test_send_by_id_creates_the_contact_and_resolves_language(setup):
    api = setup["api"]
    welcome = setup["welcome"]
    r = api.post(
        "/transactional",
        {
            "email": "New@Example.com",
            "transactionalId": str(welcome.pk),
            "language": "de",
            "dataVariables": {"firstName": "Max"},
        },
    )
    assert r.status_code == 202, r.content
    data = r.json()["data"]
    assert data["slug"] == "welcome" and data["contactCreated"] is True and data["language"] == "de"
    assert data["email"] == "New@Example.com"
    contact = Contact.objects.get(pk=data["contactId"])
    assert (contact.email, contact.source) == ("new@example.com", "transactional")
    assert TransactionalSend.objects.get(pk=data["transactionalEmailId"]).subject == "Willkommen"
    # an untranslated language falls back to the template default
    r = api.post(
        "/transactional",
        {"email": "x@example.com", "slug": "welcome", "language": "fr", "dataVariables": {"firstName": "A"}},
    )
    assert r.json()["data"]["language"] == "en"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"slug": "welcome"}, "email is required"),
        ({"email": 5, "slug": "welcome"}, "email must be a string"),
        ({"email": "nope", "slug": "welcome"}, "Invalid email format"),
        (
            {"email": "a@example.com", "slug": "welcome", "dataVariables": []},
            "dataVariables must be an object",
        ),
        (
            {"email": "a@example.com", "slug": "welcome", "dataVariables": {"a": {"b": 1}}},
            "dataVariables values must be strings, numbers, booleans or null",
        ),
        ({"email": "a@example.com", "slug": "welcome", "language": 1}, "language must be a string"),
        (
            {"email": "a@example.com", "slug": "welcome", "language": "english"},
            "language must be a valid language code (e.g., 'en', 'de', 'fr', 'en-US')",
        ),
        ({"email": "a@example.com", "slug": "welcome", "attachments": {}}, "attachments must be an array"),
        (
            {
                "email": "a@example.com",
                "slug": "welcome",
                "attachments": [{"filename": "a", "content": "YQ=="}] * 11,
            },
            "Maximum 10 attachments allowed",
        ),
        (
            {"email": "a@example.com", "slug": "welcome", "attachments": [{"content": "YQ=="}]},
            "attachments[0].filename is required and must be a string",
        ),
        (
            {
                "email": "a@example.com",
                "slug": "welcome",
                "attachments": [{"filename": "../a", "content": "YQ=="}],
            },
            "attachments[0].filename must not contain path separators",
        ),
        (
            {"email": "a@example.com", "slug": "welcome", "attachments": [{"filename": "a"}]},
            'attachments[0] must have exactly one of "content" (base64) or "url"',
        ),
        (
            {
                "email": "a@example.com",
                "slug": "welcome",
                "attachments": [{"filename": "a", "url": "http://x.test/a"}],
            },
            "attachments[0].url must be an HTTPS URL",
        ),
        (
            {"email": "a@example.com", "slug": "welcome", "attachments": [{"filename": "a", "content": 5}]},
            "attachments[0].content must be a base64-encoded string",
        ),
        (
            {
                "email": "a@example.com",
                "slug": "welcome",
                "attachments": [{"filename": "a", "content": "!!"}],
            },
            "attachments[0].content is not valid base64",
        ),
        (
            {
                "email": "a@example.com",
                "slug": "welcome",
                "attachments": [
                    {"filename": "a", "content": base64.b64encode(b"x" * (10 * 1024 * 1024 + 1)).decode()}
                ],
            },
            "Total attachment size exceeds 10MB limit",
        ),
    ],
)
def test_validation_messages(setup, body, message):
    r = setup["api"].post("/transactional", body)
    assert r.status_code == 400
    assert error_of(r)["category"] == "invalid_input" and error_of(r)["message"] == message
    assert not TransactionalSend.objects.exists()


def test_rejections_in_dlv14_order(setup, settings):
    api, org = setup["api"], setup["org"]
    body = {"email": "jane@example.com", "slug": "welcome", "dataVariables": {"firstName": "J"}}
    from owlat.suppression import suppress

    # template_not_found (slug and id)
    r = api.post("/transactional", {"email": "jane@example.com", "slug": "nope"})
    assert r.status_code == 404 and error_of(r)["message"] == 'Transactional email with slug "nope" not found'
    assert error_of(r)["data"] == {"reason": "template_not_found"}
    r = api.post("/transactional", {"email": "jane@example.com", "transactionalId": "bad-id"})
    assert r.status_code == 404 and error_of(r)["message"] == 'Transactional email with ID "bad-id" not found'
    # invalid_variables: `code` has a fallback, an unknown required variable has not
    TransactionalEmail.objects.filter(pk=setup["welcome"].pk).update(
        html_content="<p>{{firstName}} {{orderId}}</p>"
    )
    r = api.post("/transactional", body)
    assert r.status_code == 400 and error_of(r)["data"]["reason"] == "invalid_variables"
    assert "orderId" in error_of(r)["message"]
    # domain_unverified
    Domain.objects.filter(organization=org).update(status=DomainStatus.PENDING)
    r = api.post("/transactional", body)
    assert r.status_code == 422 and error_of(r)["data"]["reason"] == "domain_unverified"
    assert (
        error_of(r)["message"]
        == 'Domain "acme.test" is not verified. Please verify DNS records in Settings > Domains.'
    )
    # template_no_content comes before the domain check
    TransactionalEmail.objects.filter(pk=setup["welcome"].pk).update(html_content="")
    r = api.post("/transactional", body)
    assert error_of(r)["data"]["reason"] == "template_no_content"
    assert (
        error_of(r)["message"]
        == 'Transactional email "welcome" has no HTML content. Please save and publish it first.'
    )
    # recipient_blocked comes before template checks
    suppress(organization_id=org.pk, email="jane@example.com", reason="bounced", bounce_type="hard")
    r = api.post("/transactional", body)
    assert r.status_code == 422 and error_of(r)["data"]["reason"] == "recipient_blocked"
    assert error_of(r)["message"] == (
        "This email address is blocked. The recipient may have previously bounced or filed a complaint."
    )
    # a marketing-only suppression does not block transactional mail
    # no_delivery_provider before recipient_blocked
    settings.EMAIL_PROVIDER = ""
    r = api.post("/transactional", body)
    assert r.status_code == 422 and error_of(r)["data"]["reason"] == "no_delivery_provider"
    # abuse_blocked first
    org.settings.abuse_status = "suspended"
    org.settings.save()
    r = api.post("/transactional", body)
    assert r.status_code == 403 and error_of(r)["data"]["reason"] == "abuse_blocked"
    assert error_of(r)["message"] == "Your account has been suspended. Please contact support for assistance."
    assert not TransactionalSend.objects.exists()


def test_unengaged_suppression_does_not_block_transactional(setup):
    from owlat.suppression import suppress

    suppress(organization_id=setup["org"].pk, email="jane@example.com", reason="unengaged")
    r = setup["api"].post(
        "/transactional",
        {"email": "jane@example.com", "slug": "welcome", "dataVariables": {"firstName": "J"}},
    )
    assert r.status_code == 202


def test_feature_flag_gates_the_endpoint(setup):
    org = setup["org"]
    org.settings.feature_flags = {**org.settings.feature_flags, "transactional": False}
    org.settings.save()
    r = setup["api"].post("/transactional", {"email": "jane@example.com", "slug": "welcome"})
    assert r.status_code == 403
    assert error_of(r)["message"].startswith('Feature "transactional" is disabled')


def test_attachments_are_stored(setup):
    r = setup["api"].post(
        "/transactional",
        {
            "email": "jane@example.com",
            "slug": "welcome",
            "dataVariables": {"firstName": "J"},
            "attachments": [
                {
                    "filename": "a.txt",
                    "content": base64.b64encode(b"hello").decode(),
                    "contentType": "text/plain",
                },
                {"filename": "b.pdf", "url": "https://files.example.org/b.pdf"},
            ],
        },
    )
    assert r.status_code == 202
    rows = list(SendAttachment.objects.order_by("position"))
    assert [(a.filename, bytes(a.content) if a.content else None, a.url) for a in rows] == [
        ("a.txt", b"hello", None),
        ("b.pdf", None, "https://files.example.org/b.pdf"),
    ]


def test_status_read_back(setup):
    r = setup["api"].post(
        "/transactional",
        {"email": "jane@example.com", "slug": "welcome", "dataVariables": {"firstName": "J"}},
    )
    send_id = r.json()["data"]["transactionalEmailId"]
    reader = setup["reader"]
    r = reader.get(f"/transactional/{send_id}")
    assert r.status_code == 200
    data = r.json()["data"]
    assert set(data) == {
        "id",
        "email",
        "slug",
        "status",
        "language",
        "queuedAt",
        "sentAt",
        "deliveredAt",
        "openedAt",
        "clickedAt",
        "bouncedAt",
        "bounceType",
        "complainedAt",
        "failedAt",
        "errorCode",
        "errorMessage",
    }
    assert (data["id"], data["status"], data["slug"], data["sentAt"]) == (send_id, "queued", "welcome", None)
    assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$", data["queuedAt"])
    assert reader.get("/transactional/not-an-id").status_code == 400
    assert reader.get(f"/transactional/{uuid.uuid4()}").status_code == 404
    # another organization's key sees nothing
    other = make_org(name="Other")
    _, raw = make_key(other, ["transactional:read"])
    assert ApiClient(raw).get(f"/transactional/{send_id}").status_code == 404
    # the send scope alone cannot read
    assert setup["api"].get(f"/transactional/{send_id}").status_code == 403
