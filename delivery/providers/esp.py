"""The ESPs (ses, resend, postmark, mailgun, sendgrid, mandrill) through their django-anymail backends;
credentials in anymail's setting names from `settings.ANYMAIL`, `ANYMAIL_<NAME>` or the environment."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from django.conf import settings

from delivery.messages import OutgoingMessage
from delivery.providers.base import (
    AMBIGUOUS_TIMEOUT,
    INVALID_RECIPIENT,
    INVALID_SENDER,
    SERVER_ERROR,
    UNKNOWN,
    DispatchError,
    http_error_code,
)

ANYMAIL_BACKENDS = {
    "ses": "anymail.backends.amazon_ses.EmailBackend",
    "resend": "anymail.backends.resend.EmailBackend",
    "postmark": "anymail.backends.postmark.EmailBackend",
    "mailgun": "anymail.backends.mailgun.EmailBackend",
    "sendgrid": "anymail.backends.sendgrid.EmailBackend",
    "mandrill": "anymail.backends.mandrill.EmailBackend",
}
# anymail's setting names per ESP: (required, optional). Read from settings.ANYMAIL, then the environment.
ANYMAIL_SETTINGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ses": ((), ("AMAZON_SES_CLIENT_PARAMS", "AMAZON_SES_CONFIGURATION_SET_NAME")),
    "resend": (("RESEND_API_KEY",), ("RESEND_API_URL",)),
    "postmark": (("POSTMARK_SERVER_TOKEN",), ("POSTMARK_API_URL", "POSTMARK_MESSAGE_STREAM")),
    "mailgun": (("MAILGUN_API_KEY",), ("MAILGUN_API_URL", "MAILGUN_SENDER_DOMAIN")),
    "sendgrid": (("SENDGRID_API_KEY",), ("SENDGRID_API_URL",)),
    "mandrill": (("MANDRILL_API_KEY",), ("MANDRILL_API_URL",)),
}


# Webhook settings anymail's tracking views read from settings.ANYMAIL.
def anymail_setting(name: str) -> Any:
    configured = getattr(settings, "ANYMAIL", None) or {}
    if name in configured and configured[name] not in (None, ""):
        return configured[name]
    value = getattr(settings, f"ANYMAIL_{name}", None)
    if value not in (None, ""):
        return value
    return os.environ.get(name) or None


def ses_configured() -> bool:
    if anymail_setting("AMAZON_SES_CLIENT_PARAMS"):
        return True
    return bool(os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY")) and bool(
        os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    )


def _anymail_kwargs(provider: str) -> dict[str, Any]:
    required, optional = ANYMAIL_SETTINGS[provider]
    prefix = {"ses": "AMAZON_SES_"}.get(provider, provider.upper() + "_")
    kwargs: dict[str, Any] = {}
    for name in (*required, *optional):
        value = anymail_setting(name)
        if value is not None:
            kwargs[name[len(prefix) :].lower()] = value
    return kwargs


class AnymailTransport:
    """An ESP through its django-anymail backend; one backend connection (HTTP session) per batch."""

    def __init__(self, provider: str) -> None:
        self.provider_type = provider
        self.conn: Any = None

    def open(self) -> None:
        if self.conn is not None:
            return
        from django.core.mail import get_connection

        self.conn = get_connection(
            ANYMAIL_BACKENDS[self.provider_type], fail_silently=False, **_anymail_kwargs(self.provider_type)
        )
        self.conn.open()

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # closing must never fail a batch
                conn.close()

    def send(self, message: OutgoingMessage) -> str:
        import requests
        from anymail.exceptions import AnymailAPIError, AnymailRecipientsRefused, AnymailRequestsAPIError

        self.open()
        email = message.as_django(connection=self.conn)
        try:
            self.conn.send_messages([email])
        except AnymailRecipientsRefused as exc:
            raise DispatchError(INVALID_RECIPIENT, str(exc)) from exc
        except AnymailRequestsAPIError as exc:
            if exc.status_code is not None:
                code = http_error_code(exc.status_code)
                if code == UNKNOWN and exc.status_code in (400, 422):
                    code = _classify_4xx(str(exc))
                raise DispatchError(code, f"{exc.status_code}: {str(exc)[:500]}") from exc
            if isinstance(exc, requests.ConnectTimeout) or _is_connect_error(exc):
                raise DispatchError(SERVER_ERROR, f"Could not reach provider: {exc}") from exc
            raise DispatchError(
                AMBIGUOUS_TIMEOUT, f"Provider request outcome unknown: {exc}", on_wire=True
            ) from exc
        except AnymailAPIError as exc:
            raise DispatchError(UNKNOWN, str(exc)[:500]) from exc
        status = getattr(email, "anymail_status", None)
        statuses = set(getattr(status, "status", None) or ())
        if statuses and statuses <= {"rejected", "invalid"}:
            raise DispatchError(
                INVALID_RECIPIENT, f"Provider rejected the recipient ({', '.join(sorted(statuses))})"
            )
        message_id = getattr(status, "message_id", None)
        if isinstance(message_id, set):
            message_id = next(iter(message_id), None)
        return str(message_id or message.message_id.strip("<>"))


def _is_connect_error(exc: BaseException) -> bool:
    """True when the request never left: connection refused / name resolution (not a dropped response)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = type(current).__name__
        if name in (
            "NewConnectionError",
            "ConnectionRefusedError",
            "NameResolutionError",
            "ConnectTimeoutError",
        ):
            return True
        text = str(current)
        if "NewConnectionError" in text or "Connection refused" in text or "Failed to establish" in text:
            return True
        current = current.__cause__ or current.__context__
    return False


def _classify_4xx(text: str) -> str:
    lowered = text.lower()
    if "recipient" in lowered or "'to'" in lowered or "inactive" in lowered:
        return INVALID_RECIPIENT
    if "sender" in lowered or "from" in lowered:
        return INVALID_SENDER
    return UNKNOWN
