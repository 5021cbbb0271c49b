"""URL reputation for the security scan (AGT-13 layer 5): Google Safe Browsing Lookup API v4.

Active only with `GOOGLE_SAFE_BROWSING_API_KEY`. Every request goes through `owlat.outbound` (the outbound-HTTP
guard; `GOOGLE_SAFE_BROWSING_URL` defaults to Google's public endpoint — an operator who points it at a private proxy
lists that host in `OUTBOUND_ALLOWED_HOSTS`). Verdicts are cached per URL (`SAFE_BROWSING_CACHE_SECONDS`,
default 30 minutes) in Django's cache. Fails open: a timeout, an HTTP error or a refused connection flags
nothing (logged) — the scan never blocks on it."""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

MAX_URLS = 50
THREAT_TYPES = ["MALWARE", "SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE", "POTENTIALLY_HARMFUL_APPLICATION"]


def _key(url: str) -> str:
    return "inbox:safebrowsing:" + hashlib.sha256(url.encode("utf-8", "replace")).hexdigest()


def enabled() -> bool:
    return bool(getattr(settings, "GOOGLE_SAFE_BROWSING_API_KEY", ""))


def unsafe_urls(urls: list[str]) -> list[str]:
    """The URLs among `urls` that Safe Browsing lists as unsafe ([] when disabled or unavailable)."""
    if not enabled():
        return []
    urls = list(dict.fromkeys(u.strip() for u in urls if u and u.strip()))[:MAX_URLS]
    if not urls:
        return []
    cached = cache.get_many([_key(u) for u in urls])
    unknown = [u for u in urls if _key(u) not in cached]
    unsafe = {u for u in urls if cached.get(_key(u)) == "unsafe"}
    if unknown:
        try:
            flagged = _lookup(unknown)
        except Exception as exc:  # fails open
            logger.warning("Safe Browsing lookup unavailable: %s", exc)
            return sorted(unsafe)
        ttl = settings.SAFE_BROWSING_CACHE_SECONDS
        cache.set_many({_key(u): ("unsafe" if u in flagged else "safe") for u in unknown}, ttl)
        unsafe |= flagged
    return [u for u in urls if u in unsafe]


def _lookup(urls: list[str]) -> set[str]:
    from owlat import outbound

    body = {
        "client": {"clientId": "owlat", "clientVersion": "1.0"},
        "threatInfo": {
            "threatTypes": THREAT_TYPES,
            "platformTypes": ["ANY_PLATFORM"],
            "threatEntryTypes": ["URL"],
            "threatEntries": [{"url": u} for u in urls],
        },
    }
    with outbound.requests_session() as session:
        response = session.post(
            settings.GOOGLE_SAFE_BROWSING_URL,
            params={"key": settings.GOOGLE_SAFE_BROWSING_API_KEY},
            json=body,
            timeout=settings.SAFE_BROWSING_TIMEOUT_SECONDS,
            allow_redirects=False,
        )
    response.raise_for_status()
    matches = (response.json() or {}).get("matches") or []
    return {str((m.get("threat") or {}).get("url")) for m in matches if isinstance(m, dict)}
