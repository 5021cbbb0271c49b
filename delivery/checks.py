"""Deployment checks of what receivers judge our mail by (`manage.py check --deploy`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks


def site_url_warnings(site_url: str) -> list[checks.CheckMessage]:
    """delivery.W001 when `SITE_URL` is not https: every unsubscribe link and the RFC 8058 one-click URL in
    `List-Unsubscribe` are built from it, and Gmail and Yahoo honour one-click over https only."""
    if (site_url or "").lower().startswith("https://"):
        return []
    return [
        checks.Warning(
            f"SITE_URL ({site_url or 'empty'}) is not an https:// URL.",
            hint=(
                "Unsubscribe links and the one-click List-Unsubscribe URL of every marketing message are built "
                "from SITE_URL; receivers ignore one-click unsubscribe over plain http and may treat the mail as "
                "spam. Serve the installation over TLS and set SITE_URL=https://…"
            ),
            id="delivery.W001",
        )
    ]


@checks.register(checks.Tags.security, deploy=True)
def check_site_url_https(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return site_url_warnings(getattr(settings, "SITE_URL", ""))
