"""Provider choice and transports (DLV-17, DLV-22, D-08, D-09).

`EMAIL_PROVIDER` ∈ smtp | ses | resend | postmark | mailgun | sendgrid | mandrill | local, install-wide.
- `smtp`: `EMAIL_URL` in django-environ's form (`smtp://user:pass@host:port`, `smtp+tls://…`, `smtp+ssl://…`),
  spoken with `smtplib` directly so a connection lost after the end of DATA can be told from a refusal before it;
- the ESPs through django-anymail backends, credentials from the environment in anymail's names
  (`POSTMARK_SERVER_TOKEN`, `RESEND_API_KEY`, …; `*_API_URL` overrides the endpoint);
- `local`: every message is stored as a `LocalMessage` row for the admin.
Nothing configured → `delivery_configured()` is False (fail closed): no send row is written.

A transport's `send(message)` returns the provider message id or raises `DispatchError(code, message,
on_wire)`; only `send_provider_attempt` (delivery.dispatch) calls it.

Modules: `base` (codes, `DispatchError`, `Transport`, retry delays), `smtp`, `esp` (django-anymail), `local`,
`registry` (the choice, status, transports per job). Import the public names from `delivery.providers`.
"""

from delivery.providers.base import (
    AMBIGUOUS_TIMEOUT,
    AUTH_FAILED,
    CONTENT_REJECTED,
    DKIM_UNAVAILABLE,
    INVALID_RECIPIENT,
    INVALID_SENDER,
    PROVIDERS,
    RATE_LIMIT,
    RETRY_DELAYS_MS,
    RETRYABLE,
    SERVER_ERROR,
    SMTPUTF8_UNSUPPORTED,
    UNKNOWN,
    DispatchError,
    Transport,
    http_error_code,
    retry_delays_ms,
    smtp_error_code,
)
from delivery.providers.esp import ANYMAIL_BACKENDS, ANYMAIL_SETTINGS, AnymailTransport, anymail_setting
from delivery.providers.local import LocalTransport
from delivery.providers.registry import (
    SMTP_IDLE_SECONDS,
    delivery_configured,
    get_transport,
    provider_name,
    provider_status,
    release_transport,
    smtp_connections,
)
from delivery.providers.smtp import SmtpConfig, SmtpTransport, parse_email_url

__all__ = [
    "AMBIGUOUS_TIMEOUT",
    "ANYMAIL_BACKENDS",
    "ANYMAIL_SETTINGS",
    "AUTH_FAILED",
    "CONTENT_REJECTED",
    "DKIM_UNAVAILABLE",
    "INVALID_RECIPIENT",
    "INVALID_SENDER",
    "PROVIDERS",
    "RATE_LIMIT",
    "RETRYABLE",
    "RETRY_DELAYS_MS",
    "SERVER_ERROR",
    "SMTPUTF8_UNSUPPORTED",
    "SMTP_IDLE_SECONDS",
    "UNKNOWN",
    "AnymailTransport",
    "DispatchError",
    "LocalTransport",
    "SmtpConfig",
    "SmtpTransport",
    "Transport",
    "anymail_setting",
    "delivery_configured",
    "get_transport",
    "http_error_code",
    "parse_email_url",
    "provider_name",
    "provider_status",
    "release_transport",
    "retry_delays_ms",
    "smtp_connections",
    "smtp_error_code",
]
