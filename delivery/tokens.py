"""Public links and their tokens (DLV-20, DLV-21, D-10).

Every token is signed with Django's `signing` and a salt per purpose, so keys rotate through `SECRET_KEY` and
`SECRET_KEY_FALLBACKS`. Tracking tokens carry the organization and the send row (no lifetime, as DLV-20);
unsubscribe and preference-centre tokens carry the contact, its organization and, when there is one, the
send row for attribution (D-10), and live 90 days (DLV-21).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import threading
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.core import signing

OPEN_SALT = "owlat.delivery.track.open"
CLICK_SALT = "owlat.delivery.track.click"
UNSUBSCRIBE_SALT = "owlat.delivery.unsubscribe"
PREFERENCES_SALT = "owlat.delivery.preferences"
TOKEN_MAX_AGE = dt.timedelta(days=90)  # DLV-21


def site_url() -> str:
    return (getattr(settings, "SITE_URL", "") or "").rstrip("/")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _deflate(data: bytes, level: int = 6) -> bytes:
    """zlib data (`zlib.decompress` reads it) from a small compressor: `zlib.compress` sets up a 256 KiB state
    per call, which costs ~0.1-0.2 ms each — two tokens per campaign message made it a large share of the
    worker's CPU. A 1 KiB window is plenty for a token payload or a link."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 10, 2)
    return compressor.compress(data) + compressor.flush()


# --- tracking ---------------------------------------------------------------------------------------------


class _KeyedMac:
    """Django's `Signer.signature` with the current key, its derived HMAC key computed once: `salted_hmac`
    hashes salt + secret into a fresh key on every call, then builds the HMAC state — per token, several times
    a message. Here the keyed state is built once and copied per signature; the bytes are the same
    (tests/test_tokens: equal to `Signer.signature` for every salt; fallback keys go through Django)."""

    def __init__(self, salt: str, secret: str | bytes) -> None:
        secret = secret.encode() if isinstance(secret, str) else secret
        key = hashlib.sha256((salt + "signer").encode() + secret).digest()
        self._mac = hmac.new(key, digestmod=hashlib.sha256)

    def signature(self, value: str) -> str:
        mac = self._mac.copy()
        mac.update(value.encode())
        return signing.b64_encode(mac.digest()).decode()


class _Signer(signing.Signer):
    def __init__(self, *, salt: str) -> None:
        super().__init__(salt=salt)
        self._keyed = _KeyedMac(self.salt, self.key)

    def signature(self, value: str, key: Any = None) -> str:
        if key is None or key == self.key:
            return self._keyed.signature(value)
        return super().signature(value, key)


class _TimestampSigner(_Signer, signing.TimestampSigner):
    pass


_signers: dict[tuple[Any, ...], signing.Signer] = {}
_signers_lock = threading.Lock()


def _cached(cls: type[_Signer], salt: str) -> signing.Signer:
    """One signer per class, salt and key set (a changed `SECRET_KEY` or fallback list gets a new one)."""
    key = (cls, salt, settings.SECRET_KEY, tuple(settings.SECRET_KEY_FALLBACKS))
    signer = _signers.get(key)
    if signer is None:
        signer = cls(salt=salt)
        with _signers_lock:
            if len(_signers) > 64:
                _signers.clear()
            _signers[key] = signer
    return signer


def _signer(salt: str) -> signing.Signer:
    return _cached(_Signer, salt)


def _timestamp_signer(salt: str) -> signing.Signer:
    return _cached(_TimestampSigner, salt)


def open_token(*, organization_id: Any, send_id: Any) -> str:
    return _signer(OPEN_SALT).sign(f"{organization_id}.{send_id}")


def open_url(*, organization_id: Any, send_id: Any) -> str:
    return f"{site_url()}/t/o/{open_token(organization_id=organization_id, send_id=send_id)}"


def read_open_token(token: str) -> tuple[str, str] | None:
    """(organization_id, send_id) or None for a forged, tampered or malformed token."""
    try:
        value = _signer(OPEN_SALT).unsign(token)
    except signing.BadSignature:
        return None
    org, _, send = value.partition(".")
    return (org, send) if org and send else None


def encode_target(url: str) -> str:
    return _b64(_deflate(url.encode("utf-8"), 9)) if len(url) > 120 else "u" + _b64(url.encode("utf-8"))


def decode_target(encoded: str) -> str | None:
    try:
        if encoded.startswith("u"):
            return _unb64(encoded[1:]).decode("utf-8")
        return zlib.decompress(_unb64(encoded)).decode("utf-8")
    except (ValueError, zlib.error, UnicodeDecodeError):
        return None


def click_url(*, organization_id: Any, send_id: Any, target: str, encoded: str | None = None) -> str:
    """`<site>/t/c/<send_id>/<encoded target>/<signature>`; the signature covers organization, send and target.
    `encoded` is `encode_target(target)` when the caller already has it (a campaign's links repeat)."""
    encoded = encoded or encode_target(target)
    signature = _signer(CLICK_SALT).signature(f"{organization_id}.{send_id}.{encoded}")
    return f"{site_url()}/t/c/{organization_id}/{send_id}/{encoded}/{signature}"


def read_click(organization_id: str, send_id: str, encoded: str, signature: str) -> str | None:
    """The verified target URL (a safe http(s) URL) or None (constant-time check, fallback keys honoured)."""
    try:
        _signer(CLICK_SALT).unsign(f"{organization_id}.{send_id}.{encoded}:{signature}")
    except signing.BadSignature:
        return None
    target = decode_target(encoded)
    if not target or not is_safe_target(target):
        return None
    return target


def is_safe_target(url: str) -> bool:
    try:
        parsed = urlparse(url)
    except ValueError:
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.netloc) and "\\" not in parsed.netloc


# --- unsubscribe and preferences (DLV-21) -----------------------------------------------------------------


@dataclass(frozen=True)
class ContactToken:
    organization_id: str
    contact_id: str
    send_kind: str | None = None  # campaign | transactional
    send_id: str | None = None


@dataclass(frozen=True)
class TokenCheck:
    ok: bool
    reason: str | None = None  # invalid_format | missing_parts | expired | invalid_signature
    token: ContactToken | None = None


def _contact_token(
    salt: str, *, organization_id: Any, contact_id: Any, send_kind: str | None, send_id: Any
) -> str:
    payload: dict[str, Any] = {"o": str(organization_id), "c": str(contact_id)}
    if send_id:
        payload["k"] = send_kind or "campaign"
        payload["s"] = str(send_id)
    # django.core.signing.dumps(payload, salt=salt) without compression: a compressed value starts with "."
    # and a URL path segment beginning with a dot is a spam signal (rspamd URI_HIDDEN_PATH); the payload is two
    # UUIDs, which do not compress anyway. Tokens issued compressed before are still read (`_decode_payload`).
    data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    value = signing.b64_encode(data).decode()
    return _timestamp_signer(salt).sign(value)


def unsubscribe_token(
    *, organization_id: Any, contact_id: Any, send_kind: str | None = None, send_id: Any = None
) -> str:
    return _contact_token(
        UNSUBSCRIBE_SALT,
        organization_id=organization_id,
        contact_id=contact_id,
        send_kind=send_kind,
        send_id=send_id,
    )


def preferences_token(*, organization_id: Any, contact_id: Any) -> str:
    return _contact_token(
        PREFERENCES_SALT, organization_id=organization_id, contact_id=contact_id, send_kind=None, send_id=None
    )


def unsubscribe_url(**kwargs: Any) -> str:
    return f"{site_url()}/unsub/{unsubscribe_token(**kwargs)}"


def preferences_url(*, organization_id: Any, contact_id: Any) -> str:
    return f"{site_url()}/preferences/{preferences_token(organization_id=organization_id, contact_id=contact_id)}"


def _check(salt: str, token: str, *, now: float | None = None) -> TokenCheck:
    if not isinstance(token, str) or ":" not in token or len(token) > 2000:
        return TokenCheck(False, "invalid_format")
    signer = _timestamp_signer(salt)
    try:
        if now is None:
            value = signer.unsign(token, max_age=TOKEN_MAX_AGE)
        else:
            value = signer.unsign(token)
            _, ts, _ = token.rsplit(":", 2)
            if now - signing.b62_decode(ts) > TOKEN_MAX_AGE.total_seconds():
                return TokenCheck(False, "expired")
    except signing.SignatureExpired:
        return TokenCheck(False, "expired")
    except signing.BadSignature:
        return TokenCheck(False, "invalid_signature")
    except ValueError:
        return TokenCheck(False, "invalid_format")
    try:
        payload = _decode_payload(value)
    except (ValueError, zlib.error, UnicodeDecodeError):
        return TokenCheck(False, "invalid_format")
    if not isinstance(payload, dict) or not payload.get("o") or not payload.get("c"):
        return TokenCheck(False, "missing_parts")
    return TokenCheck(
        True,
        token=ContactToken(
            organization_id=str(payload["o"]),
            contact_id=str(payload["c"]),
            send_kind=payload.get("k"),
            send_id=payload.get("s"),
        ),
    )


def _decode_payload(value: str) -> Any:
    decompress = value.startswith(".")
    if decompress:
        value = value[1:]
    data = signing.b64_decode(value.encode())
    if decompress:
        data = zlib.decompress(data)
    return json.loads(data.decode("utf-8"))


def check_unsubscribe_token(token: str, *, now: float | None = None) -> TokenCheck:
    return _check(UNSUBSCRIBE_SALT, token, now=now)


def check_preferences_token(token: str, *, now: float | None = None) -> TokenCheck:
    return _check(PREFERENCES_SALT, token, now=now)
