"""owlat.encryption: the one Fernet helper. A token decrypts under its own purpose only, survives a SECRET_KEY
rotation through SECRET_KEY_FALLBACKS, and tokens written by the earlier per-module derivations still decrypt."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from owlat.domains.keys import PRIVATE_KEY, UndecryptableKey, decrypt_private_key, encrypt_private_key
from owlat.encryption import Purpose, Undecryptable, decrypt, encrypt

A = Purpose(salt=b"owlat-test-a", info=b"owlat.tests:a")
B = Purpose(salt=b"owlat-test-b", info=b"owlat.tests:b")


def test_a_token_decrypts_under_its_own_purpose_only():
    token = encrypt(A, b"secret")
    assert decrypt(A, token) == b"secret"
    with pytest.raises(Undecryptable):
        decrypt(B, token)


def test_a_rotated_secret_key_still_decrypts_through_the_fallbacks(settings):
    token = encrypt(A, b"secret")
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-0123456789abcdef-0123456789"
    assert decrypt(A, token) == b"secret"
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(Undecryptable):
        decrypt(A, token)


def test_dkim_keys_written_before_the_helper_still_decrypt(settings):
    # Given a token as owlat.domains.keys wrote it with its own HKDF derivation
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"owlat-dkim-private-key", info=b"owlat.domains.keys:v1"
    ).derive(settings.SECRET_KEY.encode())
    old = Fernet(base64.urlsafe_b64encode(derived)).encrypt(b"PEM").decode()
    # then the helper decrypts it, and its own tokens round-trip
    assert decrypt_private_key(old) == b"PEM"
    assert decrypt_private_key(encrypt_private_key(b"PEM")) == b"PEM"
    assert decrypt(PRIVATE_KEY, old) == b"PEM"
    with pytest.raises(UndecryptableKey):
        decrypt_private_key(encrypt(A, b"PEM"))


def test_a_legacy_sha256_derivation_still_decrypts_and_new_tokens_use_hkdf(settings):
    # Given a token written under sha256(prefix + secret), as the inbox's provider keys were
    prefix = "owlat.inbox.llm-key:"
    legacy = Fernet(
        base64.urlsafe_b64encode(hashlib.sha256(f"{prefix}{settings.SECRET_KEY}".encode()).digest())
    )
    old = legacy.encrypt(b"sk-1").decode()
    purpose = Purpose(
        salt=b"owlat-inbox-llm-key", info=b"inbox.provider_settings:v1", legacy_sha256_prefix=prefix
    )
    assert decrypt(purpose, old) == b"sk-1"
    # and a new token is not the legacy key's
    new = encrypt(purpose, b"sk-1")
    assert decrypt(purpose, new) == b"sk-1"
    with pytest.raises(Exception):  # noqa: B017, PT011 — cryptography's InvalidToken
        legacy.decrypt(new.encode())


def test_inbox_secrets_written_before_the_helper_still_decrypt(settings):
    import base64
    import hashlib

    from cryptography.fernet import Fernet

    from inbox.provider_settings import decrypt_key, encrypt_key

    old = Fernet(
        base64.urlsafe_b64encode(
            hashlib.sha256(f"owlat.inbox.llm-key:{settings.SECRET_KEY}".encode()).digest()
        )
    ).encrypt(b"sk-old")
    assert decrypt_key(old.decode()) == "sk-old"
    assert decrypt_key(encrypt_key("sk-new")) == "sk-new"
    assert decrypt_key("not-a-token") == ""
