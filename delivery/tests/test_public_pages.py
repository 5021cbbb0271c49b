"""Tracking, unsubscribe, preference centre and DOI pages (DLV-20, DLV-21, DOM-08, D-10)."""

from __future__ import annotations

import time

import pytest
from django.core import signing
from django.test import Client

from delivery import tokens
from delivery.lifecycle import SendRef, send_transition
from delivery.models import TransactionalSend
from delivery.services import campaign_counters
from owlat.models import ContactTopic, Topic


@pytest.fixture
def client():
    return Client()


@pytest.fixture
def sent(make_campaign_send, contact):
    send = make_campaign_send(contact)
    send_transition(SendRef.of(send), "sent", {"provider_message_id": "p1"})
    send.refresh_from_db()
    return send


def _click_parts(url: str) -> list[str]:
    return url.split("/t/c/")[1].split("/")


# --- open pixel ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_open_pixel_valid_records_the_open(client, sent):
    r = client.get(_path(tokens.open_url(organization_id=sent.organization_id, send_id=sent.pk)))
    assert r.status_code == 200 and r["Content-Type"] == "image/gif"
    assert r["Cache-Control"] == "no-store, no-cache, must-revalidate"
    sent.refresh_from_db()
    assert sent.status == "opened" and sent.open_count == 1


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


@pytest.mark.django_db
def test_open_pixel_tampered_or_foreign_records_nothing(client, sent, other_org):
    token = tokens.open_token(organization_id=sent.organization_id, send_id=sent.pk)
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    foreign = tokens.open_token(organization_id=other_org.pk, send_id=sent.pk)  # validly signed, wrong org
    for t in (tampered, foreign, "garbage"):
        r = client.get(f"/t/o/{t}")
        assert r.status_code == 200 and r.content.startswith(b"GIF89a")
    sent.refresh_from_db()
    assert sent.status == "sent" and sent.open_count == 0


# --- click redirect -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_click_valid_redirects_and_records(client, sent):
    url = tokens.click_url(
        organization_id=sent.organization_id, send_id=sent.pk, target="https://example.org/a?b=1"
    )
    r = client.get(_path(url))
    assert r.status_code == 302 and r["Location"] == "https://example.org/a?b=1"
    sent.refresh_from_db()
    assert sent.status == "clicked" and sent.clicked_links[0]["url"] == "https://example.org/a?b=1"


@pytest.mark.django_db
def test_click_with_swapped_target_redirects_home_and_records_nothing(client, sent, settings):
    good = tokens.click_url(
        organization_id=sent.organization_id, send_id=sent.pk, target="https://example.org/"
    )
    org_id, send_id, _encoded, sig = _click_parts(good)
    evil = tokens.encode_target("https://evil.example/phish")
    r = client.get(f"/t/c/{org_id}/{send_id}/{evil}/{sig}")
    assert r.status_code == 302 and r["Location"] == settings.SITE_URL
    sent.refresh_from_db()
    assert sent.status == "sent" and sent.clicked_links == []


@pytest.mark.django_db
def test_click_of_another_organization_or_unsafe_target_records_nothing(client, sent, other_org, settings):
    foreign = tokens.click_url(organization_id=other_org.pk, send_id=sent.pk, target="https://example.org/")
    unsafe = tokens.click_url(
        organization_id=sent.organization_id, send_id=sent.pk, target="javascript:alert(1)"
    )
    for url in (foreign, unsafe):
        r = client.get(_path(url))
        assert r.status_code == 302 and r["Location"] == settings.SITE_URL
    sent.refresh_from_db()
    assert sent.clicked_links == []


@pytest.mark.django_db
def test_click_over_the_ip_limit_redirects_without_recording(client, sent, monkeypatch):
    from delivery import views

    monkeypatch.setattr(views, "TRACK_BURST", 1.0)
    monkeypatch.setattr(views, "TRACK_RATE", 0.001)
    url = _path(
        tokens.click_url(
            organization_id=sent.organization_id, send_id=sent.pk, target="https://example.org/x"
        )
    )
    assert client.get(url)["Location"] == "https://example.org/x"
    assert client.get(url)["Location"] == "https://example.org/x"
    sent.refresh_from_db()
    assert len(sent.clicked_links) == 1


@pytest.mark.django_db
def test_links_survive_secret_key_rotation(client, sent, settings):
    url = _path(
        tokens.click_url(
            organization_id=sent.organization_id, send_id=sent.pk, target="https://example.org/r"
        )
    )
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "a-brand-new-secret-key-0123456789abcdefghijklmnop"
    settings.SECRET_KEY_FALLBACKS = [old]
    assert client.get(url)["Location"] == "https://example.org/r"
    settings.SECRET_KEY_FALLBACKS = []
    assert client.get(url)["Location"] == settings.SITE_URL


# --- unsubscribe ------------------------------------------------------------------------------------------------


@pytest.fixture
def topics(org, contact):
    a = Topic.objects.create(organization=org, name="News", require_double_opt_in=False)
    b = Topic.objects.create(organization=org, name="Offers", require_double_opt_in=False)
    for t in (a, b):
        ContactTopic.objects.create(organization=org, contact=contact, topic=t)
    return a, b


def _unsub_token(send):
    return tokens.unsubscribe_token(
        organization_id=send.organization_id,
        contact_id=send.contact_id,
        send_kind="campaign",
        send_id=send.pk,
    )


@pytest.mark.django_db
def test_one_click_unsubscribe_removes_topics_and_attributes_the_campaign(client, sent, contact, topics):
    token = _unsub_token(sent)
    page = client.get(f"/unsub/{token}")
    assert page.status_code == 200 and b"<form" in page.content
    r = client.post(
        f"/unsub/{token}", data="List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert r.status_code == 200
    assert r.json()["message"] == "You have been successfully unsubscribed from 2 topics"
    contact.refresh_from_db()
    assert contact.unsubscribed_at is not None
    assert not ContactTopic.objects.filter(contact=contact).exists()
    sent.refresh_from_db()
    assert sent.unsubscribed_at is not None
    assert campaign_counters(sent.campaign_id)["unsubscribed"] == 1
    # a second click: already unsubscribed, counted once
    r = client.post(
        f"/unsub/{token}", data="List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert r.json()["message"] == "You were already unsubscribed from all topics"
    assert campaign_counters(sent.campaign_id)["unsubscribed"] == 1


@pytest.mark.django_db
def test_unsubscribe_singular_message_and_html_answer(client, sent, contact, org):
    topic = Topic.objects.create(organization=org, name="Only", require_double_opt_in=False)
    ContactTopic.objects.create(organization=org, contact=contact, topic=topic)
    r = client.post(f"/unsub/{_unsub_token(sent)}", HTTP_ACCEPT="text/html")
    assert r.status_code == 200
    assert b"You have been successfully unsubscribed from 1 topic<" in r.content


@pytest.mark.django_db
def test_unsubscribe_in_the_contact_language(client, sent, contact, topics):
    contact.language = "de"
    contact.save()
    r = client.post(f"/unsub/{_unsub_token(sent)}", HTTP_ACCEPT="text/html")
    assert b"Du wurdest erfolgreich von 2 Themen abgemeldet" in r.content


@pytest.mark.django_db
def test_unsubscribe_tampered_expired_foreign_and_missing(client, sent, contact, other_org, monkeypatch):
    good = _unsub_token(sent)
    tampered = good[:-3] + ("xyz" if not good.endswith("xyz") else "abc")
    r = client.post(f"/unsub/{tampered}")
    assert r.status_code == 400 and r.json()["error"] == "Invalid or expired unsubscribe link"
    assert client.get(f"/unsub/verify/{tampered}").json() == {"ok": False, "reason": "invalid_signature"}
    assert client.get("/unsub/verify/no-colon-here").json() == {"ok": False, "reason": "invalid_format"}
    missing = signing.dumps({"c": str(contact.pk)}, salt=tokens.UNSUBSCRIBE_SALT)
    assert client.get(f"/unsub/verify/{missing}").json() == {"ok": False, "reason": "missing_parts"}
    # 91 days old
    real_time = time.time
    monkeypatch.setattr(signing.time, "time", lambda: real_time() - 91 * 86400)
    expired = _unsub_token(sent)
    monkeypatch.setattr(signing.time, "time", real_time)
    assert client.get(f"/unsub/verify/{expired}").json() == {"ok": False, "reason": "expired"}
    assert client.post(f"/unsub/{expired}").status_code == 400
    # validly signed, but the contact belongs to another organization than the token says
    foreign = tokens.unsubscribe_token(organization_id=other_org.pk, contact_id=contact.pk)
    r = client.post(f"/unsub/{foreign}")
    assert r.status_code == 404 and r.json()["error"] == "Contact not found"
    contact.refresh_from_db()
    assert contact.unsubscribed_at is None
    assert client.get(f"/unsub/verify/{good}").json()["ok"] is True


@pytest.mark.django_db
def test_contact_tokens_keep_django_signing_format_both_ways(sent):
    """Contact tokens are what `signing.dumps` writes (uncompressed: a path segment starting with "." is a spam
    signal); tokens of either make — also `compress=True` ones from before — are read by both, and long link
    targets still round-trip."""
    payload = {"o": str(sent.organization_id), "c": str(sent.contact_id), "k": "campaign", "s": str(sent.pk)}
    ours = _unsub_token(sent)
    assert not ours.startswith(".")
    assert signing.loads(ours, salt=tokens.UNSUBSCRIBE_SALT) == payload
    django_made = signing.dumps(payload, salt=tokens.UNSUBSCRIBE_SALT, compress=True)
    check = tokens.check_unsubscribe_token(django_made)
    assert check.ok and check.token.send_id == str(sent.pk)
    target = "https://example.org/" + "long/path/" * 40 + "?q=1"
    assert tokens.decode_target(tokens.encode_target(target)) == target


@pytest.mark.django_db
def test_preference_centre_toggles_topics(client, org, contact, topics):
    news, offers = topics
    token = tokens.preferences_token(organization_id=org.pk, contact_id=contact.pk)
    page = client.get(f"/preferences/{token}")
    assert page.status_code == 200 and b"News" in page.content and b"Offers" in page.content
    r = client.post(f"/preferences/{token}", {"topics": [str(news.pk)], "action": "submit"})
    assert r.status_code == 200 and b"Your preferences have been saved." in r.content
    assert list(ContactTopic.objects.filter(contact=contact).values_list("topic_id", flat=True)) == [news.pk]
    r = client.post(f"/preferences/{token}", {"action": "unsubscribe_all"})
    assert not ContactTopic.objects.filter(contact=contact).exists()
    contact.refresh_from_db()
    assert contact.unsubscribed_at is not None
    assert client.get("/preferences/bad:token").status_code == 400


# --- double opt-in --------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_doi_mail_queued_and_confirmation_page(client, org, make_contact, settings):
    from owlat.topics import topic_subscribe

    settings.EMAIL_PROVIDER = "local"
    contact = make_contact(email="doi@example.com", language="de")
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=True)
    assert topic_subscribe(contact=contact, topic=topic, source="form", actor="system:test") == "pending_doi"
    send = TransactionalSend.objects.get(email="doi@example.com")
    contact.refresh_from_db()
    assert send.kind == "transactional" and send.status == "queued"
    assert send.subject == "Bitte bestätige dein Abonnement"
    confirm_path = f"/doi/confirm/{contact.doi_confirmation_token}"
    assert confirm_path in send.html_body and "Newsletter" in send.html_body
    page = client.get(confirm_path)
    assert page.status_code == 200 and b"<form" in page.content
    r = client.post(confirm_path)
    assert r.status_code == 200 and "Danke! Dein Abonnement ist bestätigt.".encode() in r.content
    contact.refresh_from_db()
    assert contact.doi_status == "confirmed"
    assert not ContactTopic.objects.get(contact=contact, topic=topic).pending_doi_confirmation
    again = client.post(confirm_path)  # the link used twice: "already confirmed", not "invalid"
    assert again.status_code == 200 and "Dein Abonnement war bereits bestätigt.".encode() in again.content


@pytest.mark.django_db
def test_no_doi_mail_without_a_provider(org, make_contact, settings):
    from owlat.topics import topic_subscribe

    settings.EMAIL_PROVIDER = ""
    contact = make_contact(email="doi2@example.com")
    topic = Topic.objects.create(organization=org, name="N", require_double_opt_in=True)
    assert topic_subscribe(contact=contact, topic=topic, source="form", actor="system:test") == "pending_doi"
    assert not TransactionalSend.objects.exists()
