"""The signing shortcuts of delivery.tokens give Django's own signatures (issue 12: a keyed HMAC state built once
per salt and key instead of per signature), and the tokens still verify through Django and after a key rotation."""

from __future__ import annotations

import uuid

import pytest
from django.core import signing

from delivery import tokens
from delivery.tracking import rewrite_links


@pytest.mark.parametrize(
    "salt", [tokens.OPEN_SALT, tokens.CLICK_SALT, tokens.UNSUBSCRIBE_SALT, tokens.PREFERENCES_SALT]
)
def test_the_cached_signers_sign_as_django_does(salt, settings):
    settings.SECRET_KEY = "k" * 50
    for value in ["", "a", "org.send", "ü" * 40, "x" * 500]:
        assert tokens._signer(salt).signature(value) == signing.Signer(salt=salt).signature(value)
        assert tokens._timestamp_signer(salt).signature(value) == signing.TimestampSigner(
            salt=salt
        ).signature(value)


def test_a_changed_secret_key_gets_a_new_signer_and_old_tokens_verify_through_the_fallback(settings):
    org, contact = uuid.uuid4(), uuid.uuid4()
    settings.SECRET_KEY = "old-" + "k" * 46
    old = tokens.unsubscribe_token(organization_id=org, contact_id=contact)
    open_old = tokens.open_token(organization_id=org, send_id="s1")
    settings.SECRET_KEY = "new-" + "k" * 46
    new = tokens.unsubscribe_token(organization_id=org, contact_id=contact)
    assert new.rsplit(":", 1)[1] != old.rsplit(":", 1)[1]
    assert tokens.check_unsubscribe_token(new).ok
    assert tokens.check_unsubscribe_token(old).reason == "invalid_signature"
    assert tokens.read_open_token(open_old) is None
    settings.SECRET_KEY_FALLBACKS = ["old-" + "k" * 46]
    check = tokens.check_unsubscribe_token(old)
    assert check.ok and check.token.contact_id == str(contact)
    assert tokens.read_open_token(open_old) == (str(org), "s1")
    # Django reads the tokens too (same format and signature)
    assert signing.loads(new, salt=tokens.UNSUBSCRIBE_SALT) == {"o": str(org), "c": str(contact)}


def test_rewritten_links_are_signed_per_send_and_read_back(settings):
    settings.SITE_URL = "https://owlat.test"
    markup = (
        '<a href="https://example.org/a?x=1&amp;y=2">A</a> <a class="b" href="https://example.org/a?x=1&amp;y=2">'
        'B</a> <a href="mailto:x@y.z">M</a> <a data-no-track href="https://example.org/n">N</a> '
        '<a href="https://owlat.test/unsub/t">U</a> <a href="javascript:alert(1)">J</a>'
    )
    org = uuid.uuid4()
    first = rewrite_links(markup, organization_id=org, send_id="s1", no_track=("https://owlat.test/unsub/t",))
    second = rewrite_links(
        markup, organization_id=org, send_id="s2", no_track=("https://owlat.test/unsub/t",)
    )
    assert first != second  # signed per send, though the tags repeat
    for send, out in (("s1", first), ("s2", second)):
        assert out.count("https://owlat.test/t/c/") == 2
        assert 'href="mailto:x@y.z"' in out and 'data-no-track href="https://example.org/n"' in out
        assert 'href="https://owlat.test/unsub/t"' in out and 'href="javascript:alert(1)"' in out
        assert '<a class="b" href="https://owlat.test/t/c/' in out
        url = out.split('href="', 1)[1].split('"', 1)[0]
        org_id, send_id, encoded, signature = url.split("/")[-4:]
        assert (org_id, send_id) == (str(org), send)
        assert tokens.read_click(org_id, send_id, encoded, signature) == "https://example.org/a?x=1&y=2"


def test_unsubscribe_tokens_never_start_with_a_dot_and_old_compressed_ones_still_read():
    for _ in range(50):
        org, contact, send = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        token = tokens.unsubscribe_token(
            organization_id=org, contact_id=contact, send_kind="campaign", send_id=send
        )
        assert not token.startswith(".")  # rspamd URI_HIDDEN_PATH
        assert tokens.check_unsubscribe_token(token).token.contact_id == str(contact)
        assert not tokens.preferences_token(organization_id=org, contact_id=contact).startswith(".")
    legacy = signing.dumps({"o": "o1", "c": "c" * 80}, salt=tokens.UNSUBSCRIBE_SALT, compress=True)
    assert legacy.startswith(".")  # the old form, in mail sent before
    assert tokens.check_unsubscribe_token(legacy).token.contact_id == "c" * 80


def test_deploy_check_warns_when_site_url_is_not_https():
    from delivery.checks import site_url_warnings

    [warning] = site_url_warnings("http://127.0.0.1:8000")
    assert warning.id == "delivery.W001" and "https" in warning.hint
    assert site_url_warnings("https://mail.example.com") == []
