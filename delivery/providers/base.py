"""What every provider shares: the provider names, the DLV-17 error codes and retry delays, `DispatchError`,
the D-08 SMTP and DLV-17 HTTP code mappings, and the `Transport` protocol."""

from __future__ import annotations

from typing import Protocol

from delivery.messages import OutgoingMessage

PROVIDERS = ("smtp", "ses", "resend", "postmark", "mailgun", "sendgrid", "mandrill", "local")

# DLV-17 retry delays (ms) per provider; providers not listed in the spec use the SMTP delays.
RETRY_DELAYS_MS: dict[str, tuple[int, ...]] = {
    "smtp": (1000, 5000, 30000),
    "ses": (1000, 5000, 30000),
    "resend": (1000, 5000, 30000),
    "mandrill": (1000, 5000, 30000),
    "postmark": (1000, 5000, 30000),
    "mailgun": (1000, 5000, 30000),
    "sendgrid": (1000, 5000, 30000),
    "local": (),
}

# Error codes (DLV-17).
RATE_LIMIT = "RATE_LIMIT"
SERVER_ERROR = "SERVER_ERROR"
INVALID_RECIPIENT = "INVALID_RECIPIENT"
INVALID_SENDER = "INVALID_SENDER"
AUTH_FAILED = "AUTH_FAILED"
CONTENT_REJECTED = "CONTENT_REJECTED"
AMBIGUOUS_TIMEOUT = "AMBIGUOUS_TIMEOUT"
SMTPUTF8_UNSUPPORTED = "SMTPUTF8_UNSUPPORTED"
#: The sending domain should sign with DKIM and cannot (key not published, undecryptable): not retried.
DKIM_UNAVAILABLE = "DKIM_UNAVAILABLE"
UNKNOWN = "UNKNOWN"
RETRYABLE = frozenset({RATE_LIMIT, SERVER_ERROR})


class DispatchError(Exception):
    """A provider refused or failed. `on_wire`: the request may have been accepted (outcome unknown)."""

    def __init__(self, code: str, message: str, *, on_wire: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.on_wire = on_wire

    @property
    def retryable(self) -> bool:
        return self.code in RETRYABLE


def smtp_error_code(code: int) -> str:
    """D-08 mapping of an SMTP reply code."""
    if code in (421, 450, 451, 452):
        return RATE_LIMIT
    if 400 <= code < 500:
        return SERVER_ERROR
    if code in (550, 551, 553):
        return INVALID_RECIPIENT
    if code in (552, 554):
        return CONTENT_REJECTED
    if code in (530, 535):
        return AUTH_FAILED
    return UNKNOWN


def http_error_code(status: int | None) -> str:
    """DLV-17 HTTP mapping: 429 → RATE_LIMIT, ≥ 500 → SERVER_ERROR, 401/403 → AUTH_FAILED."""
    if status == 429:
        return RATE_LIMIT
    if status is not None and status >= 500:
        return SERVER_ERROR
    if status in (401, 403):
        return AUTH_FAILED
    return UNKNOWN


class Transport(Protocol):
    provider_type: str

    def open(self) -> None: ...

    def send(self, message: OutgoingMessage) -> str: ...

    def close(self) -> None: ...


def retry_delays_ms(provider: str) -> tuple[int, ...]:
    return RETRY_DELAYS_MS.get(provider, (1000, 5000, 30000))
