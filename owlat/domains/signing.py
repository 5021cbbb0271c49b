"""DKIM signatures for mail this installation hands to an SMTP server itself (issue 11 item 2). Providers that
sign for the sender (the django-anymail ESPs) never call this.

The key is the sending domain's newest live key whose DNS record has verified (`keys.signing_key`); a domain
without one (no key, or a rotation whose first key is not published yet) is sent unsigned. Keys are cached per
process for `CACHE_SECONDS` so a batch does not decrypt the key per message.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import dkim

from owlat.domains import keys
from owlat.models import Domain, DomainStatus

logger = logging.getLogger(__name__)

CACHE_SECONDS = 60.0
#: Relaxed header and body canonicalization: survives the whitespace changes relays make.
CANONICALIZE = (b"relaxed", b"relaxed")

_cache: dict[tuple[str, str], tuple[float, tuple[bytes, bytes] | None]] = {}
_lock = threading.Lock()


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def _load(organization_id: Any, domain_name: str) -> tuple[bytes, bytes] | None:
    domain = Domain.objects.filter(
        organization_id=organization_id, domain__iexact=domain_name, status=DomainStatus.VERIFIED
    ).first()
    if domain is None:
        return None
    key = keys.signing_key(keys.live_keys(domain))
    if key is None:
        return None
    try:
        return key.selector.encode("ascii"), keys.private_key_pem(key)
    except keys.UndecryptableKey:
        logger.exception("DKIM key %s of %s cannot be decrypted; sending unsigned", key.selector, domain_name)
        return None


def signing_material(organization_id: Any, from_email: str) -> tuple[bytes, bytes, bytes] | None:
    """(selector, domain, private key PEM) for the From address's domain of this organization, or None."""
    domain_name = from_email.rpartition("@")[2].strip().lower()
    if not domain_name or organization_id is None:
        return None
    cache_key = (str(organization_id), domain_name)
    now = time.monotonic()
    with _lock:
        hit = _cache.get(cache_key)
    if hit is None or hit[0] < now:
        material = _load(organization_id, domain_name)
        with _lock:
            _cache[cache_key] = (now + CACHE_SECONDS, material)
    else:
        material = hit[1]
    if material is None:
        return None
    selector, pem = material
    try:
        return selector, domain_name.encode("idna"), pem
    except UnicodeError:
        return None


def dkim_sign(message: bytes, *, organization_id: Any, from_email: str) -> bytes:
    """`message` with a `DKIM-Signature` header prepended, or unchanged when the domain has no signing key."""
    material = signing_material(organization_id, from_email)
    if material is None:
        return message
    selector, domain, pem = material
    try:
        header = dkim.sign(message, selector, domain, pem, canonicalize=CANONICALIZE)
    except dkim.DKIMException:
        logger.exception("DKIM signing failed for %s; sending unsigned", domain.decode())
        return message
    return header + message
