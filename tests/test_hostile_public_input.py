"""Hostile and careless input on the public pages and the event-name rule (issue 13 item 6): 4xx, never 500;
double opt-in confirmed twice says "already confirmed"; one event-name validator for `/events` and triggers."""

from __future__ import annotations

import pytest
from django.test import Client

from automations.services.validation import AutomationInvalid, validate_trigger
from owlat.event_names import is_valid_event_name
from owlat.models import Contact, Topic
from owlat.topics import doi_confirm, topic_subscribe
from testsupport.api import ApiClient, error_of, make_key, make_org

# --- double opt-in --------------------------------------------------------------------------------------------


@pytest.fixture
def pending_contact(db, settings):
    settings.EMAIL_PROVIDER = "local"
    org = make_org()
    contact = Contact.objects.create(organization=org, email="doi@example.com")
    topic = Topic.objects.create(organization=org, name="News", require_double_opt_in=True)
    assert topic_subscribe(contact=contact, topic=topic, source="form", actor="system:test") == "pending_doi"
    contact.refresh_from_db()
    return contact


def test_confirming_twice_says_already_confirmed(pending_contact):
    token = pending_contact.doi_confirmation_token
    assert doi_confirm(token=token) == "confirmed"
    pending_contact.refresh_from_db()
    assert pending_contact.doi_confirmation_token is None  # DOM-08: confirmation clears the token
    assert doi_confirm(token=token) == "already_confirmed"
    client = Client()
    for response in (client.get(f"/doi/confirm/{token}"), client.post(f"/doi/confirm/{token}")):
        assert response.status_code == 200
        assert b"already confirmed" in response.content


def test_forged_and_foreign_tokens_stay_invalid(pending_contact):
    token = pending_contact.doi_confirmation_token
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert doi_confirm(token=forged) == "invalid"
    assert doi_confirm(token=token, organization_id=make_org("Other").pk) == "invalid"
    assert doi_confirm(token=token) == "confirmed"
    assert doi_confirm(token=forged) == "invalid"
    assert Client().get(f"/doi/confirm/{forged}").status_code == 404


# --- NUL bytes and broken unicode on public pages -------------------------------------------------------------

PUBLIC_PATHS = [
    "/doi/confirm/%00",
    "/doi/confirm/abc%00def",
    "/unsub/%00",
    "/unsub/verify/%00",
    "/preferences/%00",
    "/t/o/%00",
    "/t/c/%00/%00/%00/%00",
    "/webhooks/postmark/tracking/%00",
    "/doi/confirm/x?q=%00",
]


@pytest.mark.django_db
@pytest.mark.parametrize("path", PUBLIC_PATHS)
@pytest.mark.parametrize("method", ["get", "post"])
def test_nul_bytes_answer_400(path, method):
    response = getattr(Client(raise_request_exception=False), method)(path)
    assert 400 <= response.status_code < 500, (path, response.status_code)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/doi/confirm/%ED%A0%80",
        "/doi/confirm/%FF%FE",
        "/unsub/%ED%A0%80",
        "/preferences/%C0%AF",
        "/t/o/%ED%A0%80",
    ],
)
def test_lone_surrogates_and_invalid_utf8_answer_4xx(path):
    response = Client(raise_request_exception=False).get(path)
    assert response.status_code < 500 and response.status_code != 200 or path.startswith("/t/o/")


@pytest.mark.django_db
def test_nul_in_a_form_post_answers_400():
    response = Client(raise_request_exception=False).post("/preferences/abc", {"topics": "a\x00b"})
    assert response.status_code == 400


@pytest.mark.django_db
def test_nul_in_admin_search_answers_400(django_user_model):
    client = Client(raise_request_exception=False)
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    assert client.get("/admin/owlat/contact/?q=%00").status_code == 400
    assert client.get("/admin/owlat/contact/?q=ok").status_code == 200


def test_very_long_doi_token_is_invalid_not_500(db):
    assert Client(raise_request_exception=False).get("/doi/confirm/" + "a" * 5000).status_code == 404
    assert doi_confirm(token="a" * 5000) == "invalid"


# --- one event-name rule ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("signup", True),
        ("a" * 100, True),
        ("a" * 101, False),
        ("a" * 100_000, False),
        ("signup\n", False),
        ("sign up", False),
        ("1bad", False),
        ("", False),
        (None, False),
        ("trial_started-2", True),
    ],
)
def test_event_name_rule(name, valid):
    assert is_valid_event_name(name) is valid


@pytest.mark.django_db
def test_events_api_rejects_a_trailing_newline(settings):
    settings.API_RATE_LIMIT_PER_SECOND = settings.API_RATE_LIMIT_BURST = 10_000
    org = make_org()
    _, raw = make_key(org, scopes=["events:write", "contacts:write"])
    r = ApiClient(raw).post(
        "/events", {"email": "a@example.com", "eventName": "signup\n", "createContactIfNotExists": True}
    )
    assert r.status_code == 400
    assert error_of(r)["data"]["field"] == "eventName"


@pytest.mark.parametrize("name", ["a" * 100_000, "signup\n", "1bad", "has space"])
def test_trigger_event_name_is_validated_like_events(name):
    with pytest.raises(AutomationInvalid) as info:
        validate_trigger("event_received", {"eventName": name})
    assert info.value.field == "triggerConfig.eventName"
    assert "must start with a letter" in info.value.message
    assert validate_trigger("event_received", {"eventName": "signup"}) == (
        "event_received",
        {"eventName": "signup"},
    )


# --- CSV import limits (owlat/limits.py): refused naming the limit, nothing imported --------------------------


@pytest.fixture
def importer(db, client, django_user_model):
    from owlat.models import Membership

    org = make_org()
    user = django_user_model.objects.create_user(username="owner", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def _upload(text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("contacts.csv", text.encode(), content_type="text/csv")


IMPORT_URL = "/admin/owlat/contact/import/"


def test_an_import_over_the_size_limit_is_refused_by_its_declared_length(importer, settings):
    settings.IMPORT_MAX_BYTES = 100
    csv_text = "email,first_name\n" + "".join(f"user{i}@example.com,Name{i}\n" for i in range(5000))
    html = importer.post(IMPORT_URL, {"file": _upload(csv_text), "mode": "upsert"}).content.decode()
    assert "The file is larger than" in html and "100 bytes, IMPORT_MAX_BYTES" in html
    assert not Contact.objects.exists()


def test_an_import_over_the_row_limit_is_refused_before_any_row_is_imported(importer, settings):
    settings.IMPORT_MAX_ROWS = 3
    from testsupport.imports import import_csv

    csv_text = "email\n" + "".join(f"user{i}@example.com\n" for i in range(4))
    html = import_csv(importer, csv_text).content.decode()
    assert "more than 3 rows (IMPORT_MAX_ROWS)" in html
    assert not Contact.objects.exists()
    csv_text = "email\n" + "".join(f"user{i}@example.com\n" for i in range(3))
    assert "3 created" in import_csv(importer, csv_text).content.decode()


def test_an_import_with_more_property_columns_than_a_contact_may_have_is_refused(importer, settings):
    settings.CONTACT_PROPERTIES_MAX_KEYS = 2
    from testsupport.imports import import_csv

    csv_text = "email,a,b,c\nada@example.com,1,2,3\n"
    html = import_csv(importer, csv_text).content.decode()
    assert (
        "3 columns are read as custom properties; a contact can have at most 2 (CONTACT_PROPERTIES_MAX_KEYS)"
        in html
    )
    assert not Contact.objects.exists()


def test_an_import_row_whose_properties_are_too_large_is_listed_not_imported(importer, settings):
    settings.CONTACT_PROPERTIES_MAX_BYTES = 100
    from testsupport.imports import import_csv

    csv_text = f"email,bio\nada@example.com,{'x' * 200}\ngrace@example.com,short\n"
    html = import_csv(importer, csv_text).content.decode()
    assert "Line 2: custom properties are too large" in html and "(at most 100)" in html
    assert list(Contact.objects.values_list("email", flat=True)) == ["grace@example.com"]


def test_the_upload_handler_stops_reading_past_the_limit(settings):
    from django.core.files.uploadhandler import StopUpload

    from owlat.uploads import UploadLimitHandler

    settings.IMPORT_MAX_BYTES = 10
    settings.IMAGE_UPLOAD_MAX_BYTES = 5
    handler = UploadLimitHandler()
    assert handler.receive_data_chunk(b"x" * 10, 0) == b"x" * 10
    with pytest.raises(StopUpload) as info:
        handler.receive_data_chunk(b"x", 10)
    assert info.value.connection_reset


# --- the raw inbound endpoint's size limit --------------------------------------------------------------------


@pytest.mark.django_db
def test_raw_inbound_mail_over_the_size_limit_is_413_naming_the_limit(settings):
    from inbox.models import AgentConfig, InboundMessage

    settings.INBOX_MAX_MESSAGE_BYTES = 1000
    org = make_org()
    secret = AgentConfig.objects.get_or_create(organization=org)[0].inbound_secret
    raw = (
        b"From: a@example.com\r\nTo: s@acme.test\r\nMessage-ID: <big@example.com>\r\nSubject: x\r\n\r\n"
        + b"x" * 2000
    )
    response = Client().post(
        "/inbound/raw", data=raw, content_type="message/rfc822", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["field"] == "body" and error["limit"] == 1000 and "1000 bytes" in error["message"]
    assert not InboundMessage.objects.exists()
