"""Provider choice and transports (DLV-17, DLV-22, D-08, D-09).

`EMAIL_PROVIDER` ∈ smtp | ses | resend | postmark | mailgun | sendgrid | mandrill | local, install-wide.
- `smtp`: `EMAIL_URL` in django-environ's form (`smtp://user:pass@host:port`, `smtp+tls://…`, `smtp+ssl://…`),
  spoken with `smtplib` directly so a connection lost after the end of DATA can be told from a refusal before it;
- the ESPs through django-anymail backends, credentials from the environment in anymail's names
  (`POSTMARK_SERVER_TOKEN`, `RESEND_API_KEY`, …; `*_API_URL` overrides the endpoint);
- `local`: every message is stored as a `LocalMessage` row for the admin.
Nothing configured → `delivery_configured()` is False (fail closed): no send row is written.

A transport's `send(message)` returns the provider message id or raises `DispatchError(code, message,
on_wire)`; only `send_provider_dispatch` (delivery.dispatch) calls it.
"""

from __future__ import annotations

import contextlib
import os
import re
import smtplib
import ssl
import time
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from django.conf import settings

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


# --- SMTP -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    username: str = ""
    password: str = ""
    use_tls: bool = False
    use_ssl: bool = False
    timeout: float = 30.0


def parse_email_url(url: str) -> SmtpConfig | None:
    """`EMAIL_URL` in django-environ's form; None when it is not an SMTP URL with a host."""
    if not url:
        return None
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    if scheme not in ("smtp", "smtps", "smtp+tls", "smtp+ssl", "submission") or not parsed.hostname:
        return None
    use_ssl = scheme in ("smtps", "smtp+ssl")
    use_tls = scheme in ("smtp+tls", "submission")
    from urllib.parse import parse_qs

    query = parse_qs(parsed.query)
    if query.get("ssl", [""])[0].lower() in ("1", "true"):
        use_ssl = True
    if query.get("tls", [""])[0].lower() in ("1", "true"):
        use_tls = True
    default_port = 465 if use_ssl else (587 if use_tls else 25)
    timeout = float(query.get("timeout", ["30"])[0] or 30)
    return SmtpConfig(
        host=parsed.hostname,
        port=parsed.port or default_port,
        username=unquote(parsed.username or ""),
        password=unquote(parsed.password or ""),
        use_tls=use_tls,
        use_ssl=use_ssl,
        timeout=timeout,
    )


class SmtpTransport:
    """One SMTP connection, reused for every message of a batch; reopened after a connection error."""

    provider_type = "smtp"

    def __init__(self, config: SmtpConfig) -> None:
        self.config = config
        self.conn: smtplib.SMTP | None = None

    def open(self) -> None:
        if self.conn is not None:
            return
        cfg = self.config
        try:
            if cfg.use_ssl:
                conn: smtplib.SMTP = smtplib.SMTP_SSL(
                    cfg.host, cfg.port, timeout=cfg.timeout, context=ssl.create_default_context()
                )
            else:
                conn = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout)
            conn.ehlo()
            if cfg.use_tls:
                conn.starttls(context=ssl.create_default_context())
                conn.ehlo()
            if cfg.username:
                conn.login(cfg.username, cfg.password)
        except smtplib.SMTPAuthenticationError as exc:
            raise DispatchError(AUTH_FAILED, f"SMTP authentication failed: {exc.smtp_code}") from exc
        except smtplib.SMTPResponseException as exc:
            raise DispatchError(
                smtp_error_code(exc.smtp_code), _reply_text(exc.smtp_code, exc.smtp_error)
            ) from exc
        except (OSError, smtplib.SMTPException) as exc:
            raise DispatchError(SERVER_ERROR, f"SMTP connection failed: {exc}") from exc
        self.conn = conn

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            conn.quit()
        except (OSError, smtplib.SMTPException):
            with contextlib.suppress(OSError):
                conn.close()

    def alive(self) -> bool:
        if self.conn is None:
            return False
        try:
            code, _ = self.conn.noop()
        except (OSError, smtplib.SMTPException):
            self._abort()
            return False
        if code != 250:
            self._abort()
            return False
        return True

    def _abort(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    def _reset(self) -> None:
        """After a refusal: RSET so the next message starts clean; drop the connection if that fails."""
        if self.conn is None:
            return
        try:
            code, _ = self.conn.rset()
            if code != 250:
                self._abort()
        except (OSError, smtplib.SMTPException):
            self._abort()

    def send(self, message: OutgoingMessage) -> str:
        self.open()
        conn = self.conn
        assert conn is not None
        sender = message.envelope_from
        recipients = message.recipients
        needs_utf8 = not all(a.isascii() for a in [sender, *recipients])
        try:
            mail_options: list[str] = []
            if needs_utf8:
                if not conn.has_extn("smtputf8"):
                    raise DispatchError(SMTPUTF8_UNSUPPORTED, "The server does not support SMTPUTF8")
                mail_options.append("SMTPUTF8")
            code, reply = conn.mail(sender, mail_options)
            if code != 250:
                self._reset()
                raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
            for rcpt in recipients:
                code, reply = conn.rcpt(rcpt)
                if code not in (250, 251):
                    self._reset()
                    raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
            code, reply = conn.docmd("DATA")
            if code != 354:
                self._reset()
                raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
            payload = _DOT_RE.sub(b"..", message.as_bytes())  # dot-stuffing (RFC 5321 4.5.2)
            if not payload.endswith(b"\r\n"):
                payload += b"\r\n"
            conn.send(payload + b".\r\n")
        except DispatchError:
            raise
        except (OSError, smtplib.SMTPException) as exc:
            # Before the end of DATA: nothing was accepted (D-08 → SERVER_ERROR, retried).
            self._abort()
            raise DispatchError(SERVER_ERROR, f"SMTP connection error before end of DATA: {exc}") from exc
        try:
            code, reply = conn.getreply()
        except (OSError, smtplib.SMTPException, TimeoutError) as exc:
            # After the end of DATA and before the reply: the server may have accepted it (D-07, D-08).
            self._abort()
            raise DispatchError(
                AMBIGUOUS_TIMEOUT, f"Connection lost after end of DATA: {exc}", on_wire=True
            ) from exc
        if code != 250:
            self._reset()
            raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
        return message.message_id.strip("<>")


_DOT_RE = re.compile(rb"(?m)^\.")


def _reply_text(code: int, reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return f"{code} {text}".strip()


# --- django-anymail ESPs -----------------------------------------------------------------------------------

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


def _ses_configured() -> bool:
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


# --- local ------------------------------------------------------------------------------------------------


class LocalTransport:
    """`local` (D-09): stores each message for viewing in the admin; never leaves the machine."""

    provider_type = "local"

    def open(self) -> None:
        return None

    def close(self) -> None:
        return None

    def send(self, message: OutgoingMessage) -> str:
        from delivery.models import LocalMessage

        LocalMessage.objects.create(
            organization_id=message.organization_id,
            send_kind=message.send_kind or "",
            send_id=message.send_id,
            message_id=message.message_id,
            from_email=message.from_header,
            to=", ".join(message.recipients),
            subject=message.subject,
            html=message.html or "",
            text=message.text or "",
            headers=dict(message.headers),
            raw=message.as_bytes().decode("utf-8", "replace"),
        )
        return message.message_id.strip("<>")


# --- choice -----------------------------------------------------------------------------------------------


def provider_name() -> str:
    return (getattr(settings, "EMAIL_PROVIDER", "") or "").strip().lower()


def provider_status() -> dict[str, Any]:
    """For the admin: which provider, whether it is configured, and what is missing (no secrets)."""
    name = provider_name()
    status: dict[str, Any] = {"provider": name or None, "configured": False, "problem": None}
    if not name:
        status["problem"] = "EMAIL_PROVIDER is not set"
        return status
    if name not in PROVIDERS:
        status["problem"] = f"Unknown EMAIL_PROVIDER {name!r}"
        return status
    if name == "local":
        status["configured"] = True
    elif name == "smtp":
        cfg = parse_email_url(getattr(settings, "EMAIL_URL", ""))
        if cfg is None:
            status["problem"] = "EMAIL_URL is not set to an smtp:// URL"
        else:
            status.update(configured=True, host=cfg.host, port=cfg.port, tls=cfg.use_tls, ssl=cfg.use_ssl)
    elif name == "ses":
        status["configured"] = _ses_configured()
        if not status["configured"]:
            status["problem"] = "AWS credentials and region (or ANYMAIL AMAZON_SES_CLIENT_PARAMS) are missing"
    else:
        required, _ = ANYMAIL_SETTINGS[name]
        missing = [n for n in required if not anymail_setting(n)]
        status["configured"] = not missing
        if missing:
            status["problem"] = "Missing " + ", ".join(missing)
        api_url = anymail_setting(f"{name.upper()}_API_URL")
        if api_url:
            status["api_url"] = api_url
    return status


def delivery_configured() -> bool:
    """DLV-22: False when no provider is configured (fail closed)."""
    return bool(provider_status()["configured"])


# One idle SMTP connection is kept per worker process between jobs (small transactional jobs would otherwise
# pay connect + EHLO + QUIT per message); it is checked with NOOP before reuse and dropped after
# `SMTP_IDLE_SECONDS`.
SMTP_IDLE_SECONDS = 20.0
_idle: dict[str, Any] = {"transport": None, "since": 0.0}


def get_transport() -> Transport:
    name = provider_name()
    if not delivery_configured():
        raise DispatchError(UNKNOWN, "No delivery provider configured")
    if name == "smtp":
        cfg = parse_email_url(settings.EMAIL_URL)
        assert cfg is not None
        idle, since = _idle["transport"], _idle["since"]
        _idle["transport"] = None
        if isinstance(idle, SmtpTransport):
            if idle.config == cfg and time.monotonic() - since < SMTP_IDLE_SECONDS and idle.alive():
                return idle
            idle.close()
        return SmtpTransport(cfg)
    if name == "local":
        return LocalTransport()
    return AnymailTransport(name)


def release_transport(transport: Transport) -> None:
    """End of a job: keep a healthy SMTP connection for the next job of this process, close anything else."""
    if isinstance(transport, SmtpTransport) and transport.conn is not None:
        previous = _idle["transport"]
        if previous is not None and previous is not transport:
            previous.close()
        _idle["transport"], _idle["since"] = transport, time.monotonic()
        return
    transport.close()


def retry_delays_ms(provider: str) -> tuple[int, ...]:
    return RETRY_DELAYS_MS.get(provider, (1000, 5000, 30000))
