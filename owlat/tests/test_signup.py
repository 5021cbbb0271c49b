"""Sign-up forms: the hosted page, the subscribe flow with its confirmation link, the enumeration-safe answers,
the bot defences and every size limit (owlat.signup)."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.core import signing

from delivery.models import TransactionalSend
from owlat.contacts import contact_find_or_create
from owlat.models import (
    BlockedEmail,
    Contact,
    ContactActivity,
    ContactProperty,
    ContactTopic,
    DoiStatus,
    SignupForm,
    SignupFormDay,
    SignupFormField,
    SignupFormTopic,
    SignupSubmission,
    Topic,
)
from owlat.signup import guards
from owlat.signup.services import CONFIRM_SALT
from owlat.topics import contact_unsubscribe_all

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _mail(settings):
    settings.EMAIL_PROVIDER = "local"
    settings.SITE_URL = "http://testserver"
    settings.SIGNUP_IP_BURST = 1000
    settings.SIGNUP_FORM_BURST = 1000


def make_form(org, *, doi: bool = True, topics=None, **fields) -> SignupForm:
    form = SignupForm.objects.create(organization=org, name="Newsletter", require_double_opt_in=doi, **fields)
    for i, topic in enumerate(topics or []):
        SignupFormTopic.objects.create(organization=org, form=form, topic=topic, position=i)
    return form


@pytest.fixture
def news(org):
    return Topic.objects.create(organization=org, name="News", require_double_opt_in=True)


@pytest.fixture
def tips(org):
    return Topic.objects.create(organization=org, name="Tips", require_double_opt_in=False)


def post(client, form, data=None, *, age: float = 10, **extra):
    body = {"email": "new@example.com", "_ts": guards.timestamp_new(form.pk, now=time.time() - age)}
    body.update(data or {})
    return client.post(f"/forms/{form.pk}/", body, **extra)


def day(form) -> SignupFormDay:
    return SignupFormDay.objects.get(form=form)


def confirmation_mails(email):
    return list(TransactionalSend.objects.filter(email=email, correlation_id="signup_confirmation"))


def confirm_link(send) -> str:
    return re.search(r"http://testserver(/forms/confirm/\S+/)", send.text_body).group(1)


def neutral(response) -> str:
    """The page without what differs per rendering (the fresh timestamp)."""
    return re.sub(r'name="_ts" value="[^"]*"', "", response.content.decode())


def test_hosted_page_shows_the_organization_its_colour_and_the_fields(client, org, news, tips):
    form = make_form(org, topics=[news, tips], brand_color="#0f766e")
    prop = ContactProperty.objects.create(organization=org, key="plan", label="Plan", type="string")
    SignupFormField.objects.create(organization=org, form=form, kind="first_name", required=True)
    SignupFormField.objects.create(organization=org, form=form, kind="property", property=prop, position=1)
    r = client.get(f"/forms/{form.pk}/")
    assert r.status_code == 200
    html = r.content.decode()
    assert org.name in html and "#0f766e" in html
    assert 'name="email"' in html and 'name="first_name"' in html and 'name="prop.plan"' in html
    assert html.count('name="topics"') == 2 and 'name="website"' in html and 'name="_ts"' in html
    assert "/admin/" not in html and "<script" not in html
    assert "csrftoken" not in r.cookies


def test_doi_form_holds_the_signup_until_its_link_is_clicked(client, org, news):
    form = make_form(org, topics=[news])
    SignupFormField.objects.create(organization=org, form=form, kind="first_name")
    r = post(client, form, {"first_name": "Nia"})
    assert r.status_code == 200 and form.pending_message in r.content.decode()
    # nothing reaches the contacts before the click
    assert not Contact.objects.filter(email="new@example.com").exists()
    [send] = confirmation_mails("new@example.com")
    assert news.name in send.text_body
    assert (day(form).submissions, day(form).accepted, day(form).confirmations) == (1, 1, 0)

    link = confirm_link(send)
    assert client.get(link).status_code == 200  # a mail scanner's prefetch changes nothing
    assert not Contact.objects.filter(email="new@example.com").exists()
    r = client.post(link)
    assert r.status_code == 200 and form.confirmed_message in r.content.decode()
    contact = Contact.objects.get(email="new@example.com")
    assert (contact.source, contact.first_name, contact.doi_status) == ("form", "Nia", DoiStatus.CONFIRMED)
    membership = ContactTopic.objects.get(contact=contact, topic=news)
    assert membership.form_confirmed_at is not None and not membership.pending_doi_confirmation
    assert membership.consent_source == "form" and membership.consent_ip == "127.0.0.1"
    assert ContactActivity.objects.filter(contact=contact, activity_type="created").exists()
    assert SignupSubmission.objects.get(form=form).contact == contact
    assert day(form).confirmations == 1
    # a second click says so and changes nothing
    r = client.post(link)
    assert r.status_code == 200 and "already confirmed" in r.content.decode()
    assert day(form).confirmations == 1


def test_known_and_unknown_addresses_get_the_same_answer_and_known_data_is_kept(client, org, news):
    form = make_form(org, topics=[news])
    SignupFormField.objects.create(organization=org, form=form, kind="first_name")
    known, _ = contact_find_or_create(
        organization_id=org.pk, email="known@example.com", source="api", actor="t", first_name="Kay"
    )
    unknown = post(client, form, {"email": "stranger@example.com", "first_name": "X"})
    member = post(client, form, {"email": "known@example.com", "first_name": "Mallory"})
    assert unknown.status_code == member.status_code == 200
    assert neutral(unknown) == neutral(member)
    known.refresh_from_db()
    assert known.first_name == "Kay"  # nothing changes without the confirmation
    # re-sent at most once an hour: a second post gets the same answer and no second mail
    again = post(client, form, {"email": "known@example.com", "first_name": "Mallory"})
    assert neutral(again) == neutral(member)
    assert len(confirmation_mails("known@example.com")) == 1
    # the confirmation (by the mailbox's owner) applies what the form asked
    client.post(confirm_link(confirmation_mails("known@example.com")[0]))
    known.refresh_from_db()
    assert known.first_name == "Mallory" and ContactTopic.objects.filter(contact=known, topic=news).exists()


def test_resend_after_the_window(client, org, news, settings):
    settings.SIGNUP_RESEND_SECONDS = 0
    form = make_form(org, topics=[news])
    post(client, form)
    post(client, form)
    assert len(confirmation_mails("new@example.com")) == 2


def test_form_without_confirmation_joins_at_once(client, org, tips):
    form = make_form(org, doi=False, topics=[tips])
    r = post(client, form)
    assert form.success_message in r.content.decode()
    contact = Contact.objects.get(email="new@example.com")
    assert contact.source == "form" and ContactTopic.objects.filter(contact=contact, topic=tips).exists()
    assert ContactActivity.objects.filter(contact=contact, activity_type="created").exists()
    assert not confirmation_mails("new@example.com")


def test_unsubscribed_or_suppressed_addresses_rejoin_only_by_confirmation(client, org, tips):
    form = make_form(org, doi=False, topics=[tips])
    gone, _ = contact_find_or_create(
        organization_id=org.pk, email="gone@example.com", source="api", actor="t"
    )
    contact_unsubscribe_all(contact=gone, source="admin", actor="t")
    BlockedEmail.objects.create(organization=org, email="blocked@example.com", reason="manual")
    fresh = post(client, form, {"email": "fresh@example.com"})
    for email in ("gone@example.com", "blocked@example.com"):
        r = post(client, form, {"email": email})
        assert neutral(r) == neutral(fresh)  # the same "subscribed" answer ...
        assert not ContactTopic.objects.filter(contact__email=email, topic=tips).exists()  # ... but held
    [send] = confirmation_mails("gone@example.com")
    client.post(confirm_link(send))
    gone.refresh_from_db()
    assert gone.unsubscribed_at is None and ContactTopic.objects.filter(contact=gone, topic=tips).exists()


@pytest.mark.parametrize(
    ("data", "age", "reason"),
    [
        ({"website": "http://spam.example"}, 10, "refused_honeypot"),
        ({}, 0.5, "refused_too_fast"),
    ],
)
def test_bots_get_the_neutral_answer_and_leave_no_trace(client, org, news, data, age, reason):
    form = make_form(org, topics=[news])
    good = post(client, form, {"email": "human@example.com"})
    bot = post(client, form, {"email": "bot@example.com", **data}, age=age)
    assert bot.status_code == 200 and neutral(bot) == neutral(good)
    assert not Contact.objects.filter(email="bot@example.com").exists()
    assert not SignupSubmission.objects.filter(email="bot@example.com").exists()
    assert not confirmation_mails("bot@example.com")
    assert getattr(day(form), reason) == 1 and day(form).submissions == 2


def test_a_burst_from_one_address_is_refused(client, org, news, settings):
    settings.SIGNUP_IP_BURST = 3
    settings.SIGNUP_IP_RATE_PER_MINUTE = 1
    form = make_form(org, topics=[news])
    answers = [neutral(post(client, form, {"email": f"b{i}@example.com"})) for i in range(6)]
    assert len(set(answers)) == 1
    assert SignupSubmission.objects.filter(form=form).count() == 3
    assert day(form).refused_rate_limit == 3
    # another client address still gets through
    post(client, form, {"email": "other@example.com"}, REMOTE_ADDR="10.0.0.9")
    assert SignupSubmission.objects.filter(email="other@example.com").exists()


def test_a_burst_on_one_form_is_refused(client, org, news, settings):
    settings.SIGNUP_FORM_BURST = 2
    settings.SIGNUP_FORM_RATE_PER_MINUTE = 1
    form = make_form(org, topics=[news])
    for i in range(4):
        post(client, form, {"email": f"f{i}@example.com"}, REMOTE_ADDR=f"10.0.1.{i}")
    assert SignupSubmission.objects.filter(form=form).count() == 2 and day(form).refused_rate_limit == 2


def test_posts_from_unlisted_origins_are_refused(client, org, news):
    form = make_form(org, topics=[news], allowed_origins="https://www.acme.test\n")
    good = post(client, form, {"email": "a@example.com"}, HTTP_ORIGIN="https://www.acme.test")
    evil = post(client, form, {"email": "b@example.com"}, HTTP_ORIGIN="https://evil.test")
    own = post(client, form, {"email": "c@example.com"}, HTTP_ORIGIN="http://testserver")
    assert neutral(good) == neutral(evil) == neutral(own)
    assert set(SignupSubmission.objects.values_list("email", flat=True)) == {"a@example.com", "c@example.com"}
    assert day(form).refused_origin == 1


def test_a_post_without_a_fresh_timestamp_is_shown_again(client, org, news):
    form = make_form(org, topics=[news])
    r = client.post(f"/forms/{form.pk}/", {"email": "embed@example.com", "_ts": "forged"})
    assert r.status_code == 200 and "press the button again" in r.content.decode()
    assert 'value="embed@example.com"' in r.content.decode()
    assert not SignupSubmission.objects.exists() and not SignupFormDay.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"email": "not-an-address"}, "email"),
        ({"email": ""}, "email"),
        ({"email": "a" * 250 + "@example.com"}, "email"),
        ({"first_name": "x" * 201}, "first_name"),
        ({"prop.age": "twelve"}, "prop.age"),
        ({"prop.born": "31.12.1990"}, "prop.born"),
        ({"topics": []}, "topics"),
    ],
)
def test_bad_fields_are_named(client, org, news, tips, data, field):
    form = make_form(org, topics=[news, tips])
    age = ContactProperty.objects.create(organization=org, key="age", type="number")
    born = ContactProperty.objects.create(organization=org, key="born", type="date")
    SignupFormField.objects.create(organization=org, form=form, kind="first_name")
    SignupFormField.objects.create(organization=org, form=form, kind="property", property=age)
    SignupFormField.objects.create(organization=org, form=form, kind="property", property=born)
    body = {"topics": [str(news.pk)], **data}
    r = post(client, form, body)
    assert r.status_code == 400
    assert f"{field}" in r.content.decode()
    assert not SignupSubmission.objects.exists() and day(form).refused_invalid == 1


def test_required_fields_and_typed_values(client, org, news):
    form = make_form(org, topics=[news])
    plan = ContactProperty.objects.create(organization=org, key="vip", type="boolean")
    SignupFormField.objects.create(organization=org, form=form, kind="last_name", required=True)
    SignupFormField.objects.create(organization=org, form=form, kind="property", property=plan)
    assert "last_name is required" in post(client, form).content.decode()
    post(client, form, {"last_name": "Lee", "prop.vip": "true"})
    assert SignupSubmission.objects.get().values == {"last_name": "Lee", "prop.vip": "true"}


def test_an_oversized_post_is_refused_before_it_is_read(client, org, news, settings):
    settings.SIGNUP_MAX_BODY_BYTES = 100
    form = make_form(org, topics=[news])
    r = post(client, form, {"first_name": "x" * 200})
    assert r.status_code == 413 and "at most 100 bytes" in r.content.decode()
    r = client.post(
        f"/forms/{form.pk}/subscribe.json", json.dumps({"email": "x" * 200}), content_type="application/json"
    )
    assert r.status_code == 413 and "body is too large" in r.json()["error"]["message"]


def test_json_variant_with_cors_for_listed_origins_only(client, org, news):
    form = make_form(org, topics=[news], allowed_origins="https://www.acme.test")
    url = f"/forms/{form.pk}/subscribe.json"
    pre = client.options(url, HTTP_ORIGIN="https://www.acme.test")
    assert pre.status_code == 204 and pre["Access-Control-Allow-Origin"] == "https://www.acme.test"
    assert "Access-Control-Allow-Origin" not in client.options(url, HTTP_ORIGIN="https://evil.test")
    ts = client.get(f"/forms/{form.pk}/timestamp.json", HTTP_ORIGIN="https://www.acme.test")
    assert ts["Access-Control-Allow-Origin"] == "https://www.acme.test"
    body = {"email": "js@example.com", "_ts": guards.timestamp_new(form.pk, now=time.time() - 5)}
    r = client.post(
        url, json.dumps(body), content_type="application/json", HTTP_ORIGIN="https://www.acme.test"
    )
    assert r.status_code == 200 and r.json()["data"]["status"] == "pending"
    assert SignupSubmission.objects.filter(email="js@example.com").exists()
    bad = client.post(url, json.dumps({**body, "email": "nope"}), content_type="application/json")
    assert bad.status_code == 400 and bad.json()["error"]["data"]["fields"] == {
        "email": "email: enter a valid email address"
    }
    assert client.post(url, "[1]", content_type="application/json").status_code == 400
    assert client.post(url, "{", content_type="application/json").status_code == 400
    stale = client.post(url, json.dumps({"email": "a@example.com"}), content_type="application/json")
    assert stale.status_code == 400 and "_ts" in stale.json()["error"]["message"]


def test_confirmation_links_expire_and_cannot_be_forged(client, org, news, settings):
    form = make_form(org, topics=[news])
    post(client, form)
    link = confirm_link(confirmation_mails("new@example.com")[0])
    assert client.post(link[:-3] + "xx/").status_code == 404
    assert client.get("/forms/confirm/nonsense/").status_code == 404
    other = signing.dumps("00000000-0000-0000-0000-000000000000", salt=CONFIRM_SALT)
    assert client.post(f"/forms/confirm/{other}/").status_code == 404
    settings.SIGNUP_CONFIRM_MAX_AGE_DAYS = -1
    assert client.post(link).status_code == 410
    assert not Contact.objects.filter(email="new@example.com").exists()


def test_inactive_or_unknown_forms_are_not_found(client, org, news):
    form = make_form(org, topics=[news], is_active=False)
    assert client.get(f"/forms/{form.pk}/").status_code == 404
    assert post(client, form).status_code == 404
    assert client.get("/forms/00000000-0000-0000-0000-000000000000/").status_code == 404


def test_translations_by_language(client, org, news):
    from owlat.models import SignupFormText

    form = make_form(org, topics=[news])
    SignupFormText.objects.create(organization=org, form=form, language="de", title="Newsletter abonnieren")
    assert "Newsletter abonnieren" in client.get(f"/forms/{form.pk}/?lang=de").content.decode()
    r = client.get(f"/forms/{form.pk}/", HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")
    assert "Newsletter abonnieren" in r.content.decode() and 'lang="de"' in r.content.decode()
    post(client, form, {"lang": "de"})
    assert "Bitte" in confirmation_mails("new@example.com")[0].subject


def test_forms_are_listed_and_read_through_the_api(org, news):
    from testsupport.api import ApiClient, make_key

    form = make_form(org, topics=[news], allowed_origins="https://www.acme.test")
    SignupFormField.objects.create(organization=org, form=form, kind="first_name", required=True)
    api = ApiClient(make_key(org, ["topics:read"])[1])
    listed = api.get("/forms")
    assert listed.status_code == 200, listed.content
    [row] = listed.json()["data"]
    assert row["id"] == str(form.pk) and row["publicUrl"] == f"http://testserver/forms/{form.pk}/"
    assert row["topics"] == [{"topicId": str(news.pk), "name": "News", "preselected": True}]
    assert row["fields"] == [{"kind": "first_name", "propertyKey": None, "label": "", "required": True}]
    assert row["allowedOrigins"] == ["https://www.acme.test"]
    one = api.get(f"/forms/{form.pk}")
    assert one.status_code == 200 and one.json()["data"]["name"] == "Newsletter"
    assert api.get("/forms/00000000-0000-0000-0000-000000000000").status_code == 404
    assert api.get("/forms/not-an-id").status_code == 400


def test_unconfirmed_signups_are_purged_after_the_link_expires_and_the_purge_is_idempotent(client, org, news):
    import datetime as dt

    from django.utils import timezone

    from owlat.schedules import collect_schedules
    from owlat.signup.retention import signup_submissions_purge, signup_submissions_purge_task

    form = make_form(org, topics=[news])
    for email in ("old@example.com", "oldconfirmed@example.com", "recent@example.com"):
        post(client, form, {"email": email})
    client.post(confirm_link(confirmation_mails("oldconfirmed@example.com")[0]))
    eight_days_ago = timezone.now() - dt.timedelta(days=8)
    SignupSubmission.objects.exclude(email="recent@example.com").update(created_at=eight_days_ago)

    assert signup_submissions_purge_task() == "purged 1 unconfirmed sign-ups"
    assert sorted(SignupSubmission.objects.values_list("email", flat=True)) == [
        "oldconfirmed@example.com",
        "recent@example.com",
    ]
    assert signup_submissions_purge() == 0  # a retried run deletes nothing more
    funcs = [s.func_path for s in collect_schedules()]
    assert "owlat.signup.retention.signup_submissions_purge_task" in funcs


def test_a_segment_condition_selects_the_contacts_who_joined_through_a_form(client, org, news, tips):
    from owlat.conditions import evaluate_filters, filters_queryset

    doi_form = make_form(org, topics=[news])
    open_form = make_form(org, doi=False, topics=[tips])
    post(client, doi_form, {"email": "confirmed@example.com"})
    client.post(confirm_link(confirmation_mails("confirmed@example.com")[0]))
    post(client, doi_form, {"email": "pending@example.com"})  # never clicked: not joined
    post(client, open_form, {"email": "open@example.com"})
    contact_find_or_create(organization_id=org.pk, email="api@example.com", source="api", actor="t")

    def emails(form_id, operator="equals"):
        filters = {
            "logic": "AND",
            "conditions": [{"kind": "signup_form", "formId": form_id, "operator": operator}],
        }
        matched = sorted(filters_queryset(org.pk, filters).values_list("email", flat=True))
        one_by_one = sorted(
            c.email for c in Contact.objects.filter(organization=org) if evaluate_filters(filters, c)
        )
        assert matched == one_by_one  # the SQL and the per-contact evaluation agree
        return matched

    assert emails(str(doi_form.pk)) == ["confirmed@example.com"]
    assert emails(str(open_form.pk)) == ["open@example.com"]
    assert emails(str(doi_form.pk), "not_equals") == ["api@example.com", "open@example.com"]
    assert emails("not-a-form") == []
