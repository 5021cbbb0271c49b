"""Hostile input answers 400 naming the field, never 500: NUL bytes, lone surrogates, deep nesting, NaN and
Infinity, values longer than their column, a malformed Content-Length."""

from __future__ import annotations

import pytest
from django.test import Client

from delivery.models import TransactionalSend
from owlat.models import Contact, Domain, DomainStatus
from templates.models import TransactionalEmail
from testsupport.api import ApiClient, error_of, make_key, make_org

pytestmark = pytest.mark.django_db
SCOPES = [
    "contacts:read",
    "contacts:write",
    "events:write",
    "transactional:send",
    "topics:read",
    "topics:manage",
    "segments:write",
    "templates:write",
    "automations:write",
]


@pytest.fixture
def org():
    return make_org(default_from_email="hello@acme.test", default_from_name="Acme")


@pytest.fixture
def api(org):
    return ApiClient(make_key(org, SCOPES)[1])


@pytest.fixture
def welcome(org, settings):
    settings.EMAIL_PROVIDER = "smtp"
    settings.EMAIL_URL = "smtp://127.0.0.1:2525"
    Domain.objects.create(organization=org, domain="acme.test", status=DomainStatus.VERIFIED)
    mail = TransactionalEmail.objects.create(
        organization=org,
        slug="welcome",
        name="Welcome",
        subject="Hi {{name}}",
        html_content="<p>{{name}}</p>",
    )
    TransactionalEmail.objects.filter(pk=mail.pk).update(status="published")
    return mail


def bad(response, field, status=400):
    assert response.status_code == status, response.content
    error = error_of(response)
    assert error["category"] == "invalid_input"
    assert error["data"]["field"] == field, error
    return error


# --- NUL bytes and lone surrogates --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["Ja\x00ne", "Ja\ud800ne", "\udfff"])
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/contacts", {"email": "a@example.com", "firstName": "{v}"}, "firstName"),
        ("/contacts", {"email": "a@example.com", "properties": {"plan": "{v}"}}, "properties.plan"),
        ("/topics", {"name": "{v}"}, "name"),
        ("/segments", {"name": "{v}"}, "name"),
        ("/templates", {"name": "{v}", "subject": "s"}, "name"),
        ("/templates", {"name": "n", "subject": "s", "content": {"a": ["{v}"]}}, "content.a[0]"),
        ("/automations", {"name": "{v}", "triggerType": "contact_created"}, "name"),
        (
            "/events",
            {"email": "a@example.com", "eventName": "e", "eventProperties": {"k": "{v}"}},
            "eventProperties.k",
        ),
    ],
)
def test_nul_and_surrogates_in_string_fields(api, path, body, field, value):
    def fill(item):
        if isinstance(item, dict):
            return {k: fill(v) for k, v in item.items()}
        if isinstance(item, list):
            return [fill(v) for v in item]
        return value if item == "{v}" else item

    # json.dumps writes a lone surrogate as the escape "\ud800", exactly what a hostile client sends
    bad(api.post(path, fill(body)), field)


def test_nul_in_email_and_in_keys(api):
    assert error_of(api.post("/contacts", {"email": "a\x00@example.com"}))["data"]["field"] == "email"
    bad(api.post("/contacts", {"email": "a@example.com", "properties": {"p\x00": "x"}}), "properties.p\x00")
    assert not Contact.objects.exists()


def test_nul_in_search_and_path(api):
    bad(api.get("/contacts?search=a%00b"), "search")
    bad(api.get("/topics?search=%00"), "search")
    response = api.get("/contacts/a%00b%40example.com")
    assert response.status_code == 400
    assert error_of(response)["message"] == "Invalid contact ID or email format"


# --- nesting, NaN and Infinity ------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_json_nested_deeper_than_the_parser_goes_is_400(api, depth):
    raw = (
        '{"email": "a@example.com", "eventName": "e", "eventProperties": {"k": '
        + "[" * depth
        + "]" * depth
        + "}}"
    )
    response = api.post("/events", raw=raw.encode())
    assert response.status_code == 400
    assert error_of(response)["category"] == "invalid_input"


def test_nesting_deeper_than_jsonb_allows_names_the_field(api):
    nested: object = "x"
    for _ in range(40):
        nested = {"a": nested}
    error = bad(
        api.post("/automations", {"name": "n", "triggerType": "contact_created", "triggerConfig": nested}),
        "triggerConfig" + ".a" * 33,
    )
    assert "nested too deeply" in error["message"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_naming_the_field(api, welcome, literal):
    raw = '{"email": "a@example.com", "eventName": "e", "eventProperties": {"score": LIT}}'.replace(
        "LIT", literal
    )
    bad(api.post("/events", raw=raw.encode()), "eventProperties.score")
    raw = '{"email": "a@example.com", "slug": "welcome", "dataVariables": {"name": LIT}}'.replace(
        "LIT", literal
    )
    bad(api.post("/transactional", raw=raw.encode()), "dataVariables.name")
    raw = '{"email": "a@example.com", "properties": {"n": LIT}}'.replace("LIT", literal)
    bad(api.post("/contacts", raw=raw.encode()), "properties.n")
    assert not TransactionalSend.objects.exists()


# --- longer than the column ---------------------------------------------------------------------------------


def test_rendered_subject_longer_than_998_is_400_naming_data_variables(api, welcome):
    response = api.post(
        "/transactional", {"email": "a@example.com", "slug": "welcome", "dataVariables": {"name": "x" * 998}}
    )
    error = bad(response, "dataVariables")
    assert error["data"]["reason"] == "subject_too_long"
    assert not TransactionalSend.objects.exists()
    ok = api.post(
        "/transactional", {"email": "a@example.com", "slug": "welcome", "dataVariables": {"name": "x" * 990}}
    )
    assert ok.status_code == 202


@pytest.mark.parametrize(
    ("attachment", "field"),
    [
        ({"filename": "a" * 256 + ".pdf", "content": "eA=="}, "attachments[0].filename"),
        (
            {"filename": "a.pdf", "content": "eA==", "contentType": "x/" + "y" * 300},
            "attachments[0].contentType",
        ),
        ({"filename": "a.pdf", "url": "https://files.example.org/" + "a" * 2000}, "attachments[0].url"),
        ({"filename": "a\x00.pdf", "content": "eA=="}, "attachments[0].filename"),
    ],
)
def test_attachment_values_longer_than_their_column(api, welcome, attachment, field):
    body = {"email": "a@example.com", "slug": "welcome", "attachments": [attachment]}
    bad(api.post("/transactional", body), field)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/contacts", {"email": "a@example.com", "firstName": "x" * 201}, "firstName"),
        ("/topics", {"name": "x" * 201}, "name"),
        ("/templates", {"name": "n", "subject": "x" * 999}, "subject"),
        ("/templates", {"name": "n", "subject": "s", "previewText": "x" * 501}, "previewText"),
        ("/contacts", {"email": "a@example.com", "properties": {"k" * 101: 1}}, "properties." + "k" * 101),
    ],
)
def test_strings_longer_than_their_column(api, path, body, field):
    bad(api.post(path, body), field)


# --- transport ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", " 12x", ""])
def test_malformed_content_length_is_400(org, length):
    _, raw = make_key(org, SCOPES)
    response = Client().generic(
        "POST",
        "/api/v1/contacts",
        b'{"email": "a@example.com"}',
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
        CONTENT_LENGTH=length,
    )
    assert response.status_code == 400, response.content
    if length:
        assert error_of(response)["data"]["field"] == "Content-Length"
    else:  # no length: an empty body
        assert error_of(response)["message"] == "Invalid JSON in request body"


# --- limits (owlat/limits.py): 400 naming the field and the limit, before any per-key work -------------------


def limited(response, field, limit, unit):
    error = bad(response, field)
    assert error["data"]["limit"] == limit and error["data"]["unit"] == unit, error
    assert str(limit) in error["message"]
    return error


def test_twenty_thousand_contact_properties_are_refused_before_any_per_key_work(api, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    # the report's payload: 20,000 properties (1.2 MB); one key would also fail its own check (too long), but the
    # count is checked first and no property is looked at, let alone written
    properties = {f"p{i}": "x" * 50 for i in range(20_000)}
    properties["k" * 101] = 1
    with CaptureQueriesContext(connection) as refused_early:  # a refusal that needs no database
        bad(api.post("/contacts", {"email": "not-an-address"}), "email")
    with CaptureQueriesContext(connection) as queries:
        response = api.post("/contacts", {"email": "a@example.com", "properties": properties})
    limited(response, "properties", settings.CONTACT_PROPERTIES_MAX_KEYS, "keys")
    assert len(queries) <= len(refused_early)  # the key's lookup and its rate limit, nothing per key
    assert not Contact.objects.exists()


def test_contact_properties_over_the_size_limit_are_refused(api, settings):
    settings.CONTACT_PROPERTIES_MAX_BYTES = 1000
    response = api.post("/contacts", {"email": "a@example.com", "properties": {"bio": "x" * 1000}})
    limited(response, "properties", 1000, "bytes")
    assert not Contact.objects.exists()
    assert (
        api.post("/contacts", {"email": "a@example.com", "properties": {"bio": "x" * 900}}).status_code == 201
    )


def test_contact_update_is_limited_like_create(api, settings):
    settings.CONTACT_PROPERTIES_MAX_KEYS = 3
    assert api.post("/contacts", {"email": "a@example.com"}).status_code == 201
    response = api.put("/contacts/a@example.com", {"properties": {f"k{i}": i for i in range(4)}})
    limited(response, "properties", 3, "keys")


def test_a_fourteen_megabyte_event_property_is_refused(api):
    response = api.post(
        "/events",
        {"email": "a@example.com", "eventName": "e", "eventProperties": {"blob": "x" * (14 * 1024 * 1024)}},
    )
    limited(response, "eventProperties", 64 * 1024, "bytes")


def test_event_properties_over_the_key_limit_are_refused(api, settings):
    settings.EVENT_PROPERTIES_MAX_KEYS = 2
    body = {"email": "a@example.com", "eventName": "e", "eventProperties": {"a": 1, "b": 2, "c": 3}}
    limited(api.post("/events", body), "eventProperties", 2, "keys")


def test_transactional_data_variables_over_their_limits_are_refused(api, welcome, settings):
    settings.TRANSACTIONAL_DATA_MAX_KEYS = 2
    body = {"email": "a@example.com", "slug": "welcome", "dataVariables": {"a": 1, "b": 2, "name": "x"}}
    limited(api.post("/transactional", body), "dataVariables", 2, "keys")
    settings.TRANSACTIONAL_DATA_MAX_KEYS = 500
    body["dataVariables"] = {"name": "x" * (300 * 1024)}
    limited(api.post("/transactional", body), "dataVariables", 256 * 1024, "bytes")
    assert not TransactionalSend.objects.exists()


def test_an_inbound_message_over_the_limit_is_refused_naming_its_largest_part(org, settings):
    settings.INBOX_MAX_MESSAGE_BYTES = 2000
    inbox = ApiClient(make_key(org, ["inbox:write"])[1])
    body = {"messageId": "<m1@example.com>", "from": "a@example.com", "to": "s@acme.test"}
    response = inbox.post("/inbox/messages", {**body, "textBody": "x", "htmlBody": "<p>" + "x" * 2000})
    limited(response, "htmlBody", 2000, "bytes")
    headers = {f"x-h{i}": "v" * 20 for i in range(200)}  # many headers: measured as a whole, not one by one
    limited(inbox.post("/inbox/messages", {**body, "headers": headers}), "headers", 2000, "bytes")
    assert inbox.post("/inbox/messages", {**body, "textBody": "x" * 1000}).status_code == 201
