"""The install-wide provider choice (`EMAIL_PROVIDER`): its status for the admin, `delivery_configured()`
(DLV-22, fail closed) and the transport a job uses, with the idle SMTP connections kept per worker process."""

from __future__ import annotations

import threading
import time
from typing import Any

from django.conf import settings

from delivery.providers.base import PROVIDERS, UNKNOWN, DispatchError, Transport
from delivery.providers.esp import ANYMAIL_SETTINGS, AnymailTransport, anymail_setting, ses_configured
from delivery.providers.local import LocalTransport
from delivery.providers.smtp import SmtpTransport, parse_email_url


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
        status["configured"] = ses_configured()
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


# A job sends over up to `smtp_connections()` SMTP connections at once (delivery.worker); they are kept idle per
# worker process between jobs (small transactional jobs would otherwise pay connect + EHLO + QUIT per message),
# checked with NOOP before reuse and dropped after `SMTP_IDLE_SECONDS`.
SMTP_IDLE_SECONDS = 20.0
_idle: list[tuple[SmtpTransport, float]] = []  # most recently released last
_idle_lock = threading.Lock()


def smtp_connections() -> int:
    """SMTP connections one pool job sends over concurrently (`DELIVERY_SMTP_CONNECTIONS`, at least 1)."""
    return max(1, int(getattr(settings, "DELIVERY_SMTP_CONNECTIONS", 4) or 1))


def get_transport() -> Transport:
    name = provider_name()
    if not delivery_configured():
        raise DispatchError(UNKNOWN, "No delivery provider configured")
    if name == "smtp":
        cfg = parse_email_url(settings.EMAIL_URL)
        assert cfg is not None
        while True:
            with _idle_lock:
                if not _idle:
                    break
                idle, since = _idle.pop()
            if idle.config == cfg and time.monotonic() - since < SMTP_IDLE_SECONDS and idle.alive():
                return idle
            idle.close()
        return SmtpTransport(cfg)
    if name == "local":
        return LocalTransport()
    return AnymailTransport(name)


def release_transport(transport: Transport) -> None:
    """End of a job: keep a healthy SMTP connection for the next job of this process (up to
    `smtp_connections()` of them), close anything else."""
    if isinstance(transport, SmtpTransport) and transport.conn is not None:
        with _idle_lock:
            if len(_idle) < smtp_connections() and all(t is not transport for t, _ in _idle):
                _idle.append((transport, time.monotonic()))
                return
    transport.close()
