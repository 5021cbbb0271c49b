"""VERP return paths: every send row gets its own envelope sender, so a bounce names the row
it is about without trusting anything the bouncing server wrote.

    b-<k><id><sig>@<RETURN_PATH_SUBDOMAIN>.<sending domain>      (e.g. b-…@bounces.acme.example)

`k` is the row's table (`c` campaign, `t` transactional), `id` the row's UUID in lowercase base32 (26 characters),
`sig` the first 10 bytes of an HMAC-SHA256 over `k` + `id` with a key derived from `SECRET_KEY` (Django's
`salted_hmac`, salt per purpose), in lowercase base32 (16 characters). The local part is 45 octets — within
RFC 5321's 64 — and case-insensitive, because some relays fold the case of local parts. Verification also tries
`SECRET_KEY_FALLBACKS`, so bounces of mail sent before a key rotation still resolve. A forged or altered
address resolves to nothing.

The domain is the sending domain's return-path domain (owlat.domains.records: published as a CNAME of
`BOUNCE_DOMAIN`, whose MX is the bounce intake), so SPF aligns with the From domain for DMARC; without a From
domain, `BOUNCE_DOMAIN` itself. `BOUNCE_DOMAIN` empty → no VERP: the envelope sender stays the From address
(providers with webhooks report bounces that way instead).
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from django.conf import settings
from django.utils.crypto import constant_time_compare, salted_hmac

VERP_SALT = "owlat.delivery.verp"
UNSUBSCRIBE_SALT = "owlat.delivery.verp.unsubscribe"
PREFIX = "b-"
UNSUBSCRIBE_PREFIX = "u-"
SIG_BYTES = 10
_KINDS = {"campaign": "c", "transactional": "t"}
_KIND_OF = {v: k for k, v in _KINDS.items()}
_ID_LEN = 26
_SIG_LEN = 16
LOCAL_PART_LEN = len(PREFIX) + 1 + _ID_LEN + _SIG_LEN
assert LOCAL_PART_LEN <= 64  # RFC 5321 4.5.3.1.1


def bounce_domain() -> str:
    return (getattr(settings, "BOUNCE_DOMAIN", "") or "").strip().lower().rstrip(".")


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _sig(body: str, secret: str | bytes, salt: str = VERP_SALT) -> str:
    mac = salted_hmac(salt, body, secret=secret, algorithm="sha256").digest()
    return _b32(mac[:SIG_BYTES])


def verp_local_part(ref_kind: str, send_id: Any) -> str:
    body = _KINDS[ref_kind] + _b32(uuid.UUID(str(send_id)).bytes)
    return PREFIX + body + _sig(body, settings.SECRET_KEY)


def verp_domain(from_email: str | None) -> str | None:
    """The return-path domain for mail from `from_email`, or None when `BOUNCE_DOMAIN` is not configured."""
    if not bounce_domain():
        return None
    from owlat.domains.records import return_path_domain

    sending = (from_email or "").rpartition("@")[2].strip().strip(".").lower()
    return return_path_domain(sending) if sending else bounce_domain()


def verp_address(ref_kind: str, send_id: Any, from_email: str | None = None) -> str | None:
    """The VERP envelope sender of one send row, or None when `BOUNCE_DOMAIN` is not configured."""
    domain = verp_domain(from_email)
    if not domain:
        return None
    return f"{verp_local_part(ref_kind, send_id)}@{domain}"


def _parse(address: str, prefix: str, salt: str) -> tuple[str, str] | None:
    local = (address or "").strip().strip("<>").rpartition("@")[0].lower()
    if len(local) != LOCAL_PART_LEN or not local.startswith(prefix):
        return None
    body, sig = local[len(prefix) : len(prefix) + 1 + _ID_LEN], local[-_SIG_LEN:]
    kind = _KIND_OF.get(body[0])
    if kind is None:
        return None
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    if not any(constant_time_compare(sig, _sig(body, secret, salt)) for secret in secrets):
        return None
    try:
        raw = base64.b32decode(body[1:].upper() + "======")
        return kind, str(uuid.UUID(bytes=raw))
    except ValueError:
        return None


def parse_verp(address: str) -> tuple[str, str] | None:
    """`(ref_kind, send_id)` of a genuine VERP address (any domain, any case), else None."""
    return _parse(address, PREFIX, VERP_SALT)


def is_verp_candidate(address: str) -> bool:
    """Looks like a VERP address (prefix and length) — whether genuine or forged."""
    local = (address or "").strip().strip("<>").rpartition("@")[0].lower()
    return local.startswith(PREFIX) and len(local) == LOCAL_PART_LEN


# `mailto:` unsubscribe (RFC 2369 `List-Unsubscribe`, beside the https one-click URL): a per-row address at the
# same return-path domain, `u-<k><id><sig>`, signed with its own salt so a bounce address never unsubscribes
# and an unsubscribe address never bounces. Mail to it (any content) unsubscribes the row's contact at the
# bounce intake.


def unsubscribe_address(ref_kind: str, send_id: Any, from_email: str | None = None) -> str | None:
    """The `mailto:` unsubscribe address of one send row, or None when `BOUNCE_DOMAIN` is not configured."""
    domain = verp_domain(from_email)
    if not domain:
        return None
    body = _KINDS[ref_kind] + _b32(uuid.UUID(str(send_id)).bytes)
    return f"{UNSUBSCRIBE_PREFIX}{body}{_sig(body, settings.SECRET_KEY, UNSUBSCRIBE_SALT)}@{domain}"


def parse_unsubscribe_address(address: str) -> tuple[str, str] | None:
    """`(ref_kind, send_id)` of a genuine unsubscribe address, else None."""
    return _parse(address, UNSUBSCRIBE_PREFIX, UNSUBSCRIBE_SALT)


def is_unsubscribe_candidate(address: str) -> bool:
    local = (address or "").strip().strip("<>").rpartition("@")[0].lower()
    return local.startswith(UNSUBSCRIBE_PREFIX) and len(local) == LOCAL_PART_LEN
