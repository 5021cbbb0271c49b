"""A hostile-input corpus (issue #13 §5) through the API, the public pages and the CSV import: every value is
either stored exactly as sent or refused with a 4xx (the API's naming the field), never a 500; and HTML in names is
escaped wherever the admin renders it (changelists, change pages, the dashboard, the contact timeline).

NUL bytes, lone surrogates, deep JSON and NaN per field are covered in depth by tests/test_api_hostile.py and
tests/test_hostile_public_input.py; this corpus runs the same kinds of value, plus unicode edge cases, everywhere.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import reverse

from owlat.models import Contact, Membership, Topic
from owlat.organizations import organization_create
from testsupport.api import ApiClient, error_of, make_key, make_org

pytestmark = pytest.mark.django_db

SCRIPT = '<script>alert("owl")</script>'
# values a careful system stores as they are
CLEAN = {
    "rtl-override": "Ad\u202ea\u202c",
    "zero-width": "A\u200bd\u200da\ufeff",
    "combining": "Z\u0351\u0363\u0364a\u0300\u0301",
    "emoji": "Ada \U0001f989\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "html": SCRIPT,
    "quotes": 'O\'Brien "&" <b>',
    "astral": "\U00010348\U0001d11e",
}
# values that must be refused (or, in a free-text store that allows them, never 500)
HOSTILE = {
    "nul": "Ad\x00a",
    "lone-surrogate": "Ad\ud800a",
    "over-long": "A" * 100_000,
}


@pytest.fixture
def api(settings):
    settings.API_RATE_LIMIT_PER_SECOND = 1_000_000.0
    settings.API_RATE_LIMIT_BURST = 1_000_000.0
    org = make_org()
    return ApiClient(make_key(org, ["contacts:read", "contacts:write", "topics:manage", "topics:read"])[1])


# --- API ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(CLEAN))
@pytest.mark.parametrize(("path", "field"), [("/contacts", "firstName"), ("/topics", "name")])
def test_api_stores_unicode_edge_cases_exactly(api, kind, path, field):
    value = CLEAN[kind]
    body = {"email": "ada@example.com", field: value} if path == "/contacts" else {field: value}
    created = api.request("POST", path, body)
    assert created.status_code == 201, created.content
    fetched = api.request("GET", f"{path}/{created.json()['data']['id']}")
    assert fetched.json()["data"][field] == value


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize(("path", "field"), [("/contacts", "firstName"), ("/topics", "name")])
def test_api_refuses_hostile_values_naming_the_field(api, kind, path, field):
    value = HOSTILE[kind]
    body = {"email": "ada@example.com", field: value} if path == "/contacts" else {field: value}
    response = api.request("POST", path, raw=json.dumps(body))
    assert response.status_code == 400, response.content
    assert error_of(response)["data"]["field"] == field


@pytest.mark.parametrize("value", [*CLEAN.values(), *HOSTILE.values()], ids=[*CLEAN, *HOSTILE])
def test_api_search_never_fails(api, value):
    response = api.request("GET", f"/contacts?search={quote(value, safe='', errors='surrogatepass')}")
    assert response.status_code in (200, 400), response.content
    if response.status_code == 400:
        assert error_of(response)["data"]["field"] == "search"


@pytest.mark.parametrize(
    "raw",
    [
        '{"email": "a@example.com", "properties": {"n": NaN}}',
        '{"email": "a@example.com", "properties": {"n": -Infinity}}',
        '{"email": "a@example.com", "properties": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"email": "a@example.com", "firstName": "\\u0000"}',
        '{"email": "a@example.com", "firstName": "\\udfff"}',
    ],
    ids=["nan", "infinity", "deep", "escaped-nul", "escaped-surrogate"],
)
def test_api_refuses_json_edge_cases(api, raw):
    response = api.request("POST", "/contacts", raw=raw)
    assert response.status_code == 400, response.content
    assert error_of(response)["category"] == "invalid_input"


# --- public pages ---------------------------------------------------------------------------------------------

PUBLIC = [
    "/doi/confirm/{}",
    "/forms/confirm/{}/",
    "/unsub/{}",
    "/unsub/verify/{}",
    "/preferences/{}",
    "/t/o/{}",
]


@pytest.mark.parametrize("template", PUBLIC)
@pytest.mark.parametrize("value", [*CLEAN.values(), *HOSTILE.values()], ids=[*CLEAN, *HOSTILE])
def test_public_pages_answer_4xx_never_500(template, value):
    client = Client(raise_request_exception=False)
    token = quote(value, safe="", errors="surrogatepass")
    for method in ("get", "post"):
        response = getattr(client, method)(template.format(token))
        assert response.status_code < 500, (template, method, response.status_code)
        if not template.startswith("/t/o/"):  # the open pixel answers its GIF whatever the token
            assert response.status_code != 200 or SCRIPT not in response.content.decode(), template


# --- CSV import -----------------------------------------------------------------------------------------------


def _import(client, text: str):
    from testsupport.imports import import_csv

    return import_csv(client, text)


@pytest.fixture
def owner(client, django_user_model):
    org = organization_create(name="Acme")
    user = django_user_model.objects.create_user(username="owner", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    client.raise_request_exception = False
    return org


@pytest.mark.parametrize("kind", sorted(CLEAN))
def test_csv_import_stores_unicode_edge_cases_exactly(client, owner, kind):
    value = CLEAN[kind].replace('"', '""')
    response = _import(client, f'email,first_name,plan\nada@example.com,"{value}","{value}"\n')
    assert response.status_code == 200
    contact = Contact.objects.get(organization=owner, email="ada@example.com")
    assert contact.first_name == CLEAN[kind]
    assert SCRIPT not in response.content.decode()


@pytest.mark.parametrize(
    ("kind", "column"),
    [("nul", "first_name"), ("nul", "plan"), ("over-long", "first_name"), ("nul", "email")],
)
def test_csv_import_lists_hostile_rows_and_imports_the_others(client, owner, kind, column):
    value = HOSTILE[kind]
    if column == "email":
        text = f"email,first_name\nad{value}a@example.com,Ada\ngrace@example.com,Grace\n"
    else:
        text = f"email,{column}\nada@example.com,{value}\ngrace@example.com,Grace\n"
    response = _import(client, text)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Line 2:" in html, html[-2000:]
    assert list(Contact.objects.filter(organization=owner).values_list("email", flat=True)) == [
        "grace@example.com"
    ]


# --- HTML in names, rendered in the admin ---------------------------------------------------------------------


def test_html_in_names_is_escaped_in_the_admin(client, owner):
    contact = Contact.objects.create(
        organization=owner, email="ada@example.com", first_name=SCRIPT, last_name=SCRIPT
    )
    topic = Topic.objects.create(organization=owner, name=SCRIPT, description=SCRIPT)
    from owlat.models import ContactTopic

    ContactTopic.objects.create(organization=owner, contact=contact, topic=topic)
    # the contact timeline (DOM-11 activity rows) and delivery's email-history section render these
    from django.utils import timezone

    from delivery.models import TransactionalSend
    from owlat.models import ContactActivity

    for activity_type, meta in (
        ("event_received", {"eventName": SCRIPT}),
        ("email_clicked", {"url": f"https://example.com/{SCRIPT}", "kind": SCRIPT}),
        ("email_bounced", {"message": SCRIPT, "bounceType": SCRIPT, "source": SCRIPT}),
    ):
        ContactActivity.objects.create(
            organization=owner,
            contact=contact,
            activity_type=activity_type,
            metadata=meta,
            occurred_at=timezone.now(),
        )
    TransactionalSend.objects.create(
        organization=owner, kind="transactional", contact=contact, email=contact.email, subject=SCRIPT
    )
    pages = [
        reverse("admin:index"),
        reverse("admin:owlat_contact_changelist"),
        reverse("admin:owlat_contact_change", args=[contact.pk]),
        reverse("admin:owlat_topic_changelist"),
        reverse("admin:owlat_topic_change", args=[topic.pk]),
        reverse("admin:owlat_contact_history", args=[contact.pk]),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert SCRIPT not in html, url
    assert "&lt;script&gt;" in client.get(reverse("admin:owlat_contact_changelist")).content.decode()
    change = client.get(reverse("admin:owlat_contact_change", args=[contact.pk])).content.decode()
    assert change.count("&lt;script&gt;") >= 6, "the timeline and email history show the names, escaped"
