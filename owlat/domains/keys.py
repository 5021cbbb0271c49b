"""DKIM keys: RSA 2048 generated with `cryptography`, the private key stored encrypted by
`owlat.encryption` (Fernet under a key derived from `SECRET_KEY`; `SECRET_KEY_FALLBACKS` still decrypt).

Rotation with overlap: `dkim_key_create` adds a key next to the live ones; the signing key is the newest key whose
DNS record has verified (`signing_key`); when a newer key verifies, the older live keys are retired
(`dkim_keys_retire_older`) and their records leave `dns_records`.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.utils import timezone

from owlat.encryption import Purpose, Undecryptable, decrypt, encrypt
from owlat.models import DkimKey, Domain

KEY_BITS = 2048
#: The DKIM private keys' encryption (the salt and info their stored tokens were written with).
PRIVATE_KEY = Purpose(salt=b"owlat-dkim-private-key", info=b"owlat.domains.keys:v1")


def encrypt_private_key(pem: bytes) -> str:
    return encrypt(PRIVATE_KEY, pem)


class UndecryptableKey(Exception):
    """Neither SECRET_KEY nor any SECRET_KEY_FALLBACKS entry decrypts the stored key."""


def decrypt_private_key(token: str) -> bytes:
    try:
        return decrypt(PRIVATE_KEY, token)
    except Undecryptable as exc:
        raise UndecryptableKey(
            "The DKIM private key cannot be decrypted with SECRET_KEY or SECRET_KEY_FALLBACKS; "
            "put the previous SECRET_KEY into SECRET_KEY_FALLBACKS or rotate the key."
        ) from exc


def generate_keypair() -> tuple[bytes, str]:
    """(PKCS#8 PEM private key, base64 DER SubjectPublicKeyInfo for the `p=` tag)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem, base64.b64encode(der).decode("ascii")


def _next_selector(domain: Domain, now: dt.datetime) -> str:
    base = f"owlat{now:%Y%m%d}"
    taken = set(
        DkimKey.objects.filter(domain=domain, selector__startswith=base).values_list("selector", flat=True)
    )
    n = 1
    while f"{base}n{n}" in taken:
        n += 1
    return f"{base}n{n}"


def dkim_key_create(domain: Domain, *, now: dt.datetime | None = None) -> DkimKey:
    """A new key for `domain` (published next to the live ones until it verifies)."""
    now = now or timezone.now()
    pem, public = generate_keypair()
    return DkimKey.objects.create(
        organization_id=domain.organization_id,
        domain=domain,
        selector=_next_selector(domain, now),
        public_key=public,
        private_key_encrypted=encrypt_private_key(pem),
    )


def live_keys(domain: Domain) -> list[DkimKey]:
    """Keys not retired, oldest first (the order their records are listed in)."""
    return list(
        DkimKey.objects.filter(
            organization_id=domain.organization_id, domain=domain, retired_at__isnull=True
        ).order_by("created_at", "selector")
    )


def signing_key(keys: list[DkimKey]) -> DkimKey | None:
    """The newest live key whose record has verified."""
    verified = [k for k in keys if k.verified_at is not None and k.retired_at is None]
    return max(verified, key=lambda k: (k.created_at, k.selector)) if verified else None


def dkim_keys_mark_verified(domain: Domain, selectors: list[str], *, at: dt.datetime) -> None:
    """Stamp the keys whose record DNS showed as published (first time only) and retire the older live keys
    once a newer key has verified (the overlap ends)."""
    DkimKey.objects.filter(
        organization_id=domain.organization_id,
        domain=domain,
        selector__in=selectors,
        verified_at__isnull=True,
    ).update(verified_at=at)
    current = signing_key(live_keys(domain))
    if current is not None:
        DkimKey.objects.filter(
            organization_id=domain.organization_id,
            domain=domain,
            retired_at__isnull=True,
            created_at__lt=current.created_at,
        ).update(retired_at=at)


def private_key_pem(key: Any) -> bytes:
    return decrypt_private_key(key.private_key_encrypted)
