"""Secrets stored encrypted in the database (DKIM private keys, provider API keys, mailbox passwords): Fernet
under a key derived from `SECRET_KEY` with HKDF-SHA256, one derived key per purpose (`Purpose`: its own salt
and info, so a token of one purpose never decrypts as another's).

Decryption also tries every `SECRET_KEY_FALLBACKS` entry, so rotating `SECRET_KEY` (the old value moved to the
fallbacks) keeps stored secrets readable; `encrypt` always uses the current key. A purpose that used to derive
its key as `sha256(prefix + secret)` names that prefix (`legacy_sha256_prefix`): tokens written that way still
decrypt, new ones are written under the HKDF key.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


@dataclass(frozen=True)
class Purpose:
    """What a secret is for: the HKDF salt and info its key is derived with."""

    salt: bytes
    info: bytes
    legacy_sha256_prefix: str | None = None


class Undecryptable(Exception):
    """Neither `SECRET_KEY` nor any `SECRET_KEY_FALLBACKS` entry decrypts the token."""


def _secrets() -> list[str]:
    return [s for s in [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])] if s]


def _derived(purpose: Purpose, secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=purpose.salt, info=purpose.info).derive(
        secret.encode("utf-8")
    )
    return Fernet(base64.urlsafe_b64encode(key))


def _legacy(prefix: str, secret: str) -> Fernet:
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(f"{prefix}{secret}".encode()).digest()))


def _fernet(purpose: Purpose) -> MultiFernet:
    """The current key first (MultiFernet encrypts with it), then the fallbacks', then the legacy keys."""
    secrets = _secrets()
    keys = [_derived(purpose, s) for s in secrets]
    if purpose.legacy_sha256_prefix is not None:
        keys += [_legacy(purpose.legacy_sha256_prefix, s) for s in secrets]
    return MultiFernet(keys)


def encrypt(purpose: Purpose, plain: bytes) -> str:
    """The Fernet token (ASCII) of `plain` under `purpose`'s key derived from the current `SECRET_KEY`."""
    return _fernet(purpose).encrypt(plain).decode("ascii")


def decrypt(purpose: Purpose, token: str) -> bytes:
    """The plain bytes of `token`; raises `Undecryptable` when no configured secret decrypts it."""
    try:
        return _fernet(purpose).decrypt(token.encode("ascii"))
    except InvalidToken as exc:
        raise Undecryptable(
            f"cannot decrypt with SECRET_KEY or SECRET_KEY_FALLBACKS ({purpose.info!r})"
        ) from exc
