"""Attachments of transactional sends (API-22): stored base64 content, or an `https://` URL fetched by the
worker at send time through the outbound-HTTP guard (`owlat.outbound`): https only, public addresses only
(checked on the address actually connected to, so DNS rebinding cannot reach a private host), every redirect
hop re-checked, size and time limits."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

import urllib3

from delivery.messages import Attachment
from owlat import outbound

MAX_TOTAL_BYTES = 10 * 1024 * 1024  # API-22: decoded total ≤ 10 MiB
FETCH_TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 3


class AttachmentError(Exception):
    pass


def check_url(url: str, *, resolver: outbound.Resolver | None = None) -> None:
    """Save-time check of an attachment URL (https, public address); AttachmentError with the reason."""
    try:
        outbound.check_url(url, schemes=("https",), resolver=resolver)
    except outbound.OutboundRefused as exc:
        raise AttachmentError(f"Attachment URL is not allowed: {exc}") from exc


def fetch_url(
    url: str,
    *,
    max_bytes: int = MAX_TOTAL_BYTES,
    timeout: float = FETCH_TIMEOUT_SECONDS,
) -> tuple[bytes, str | None]:
    """GET an https URL on a public address; returns (content, content type)."""
    deadline = time.monotonic() + timeout
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        parsed = urlsplit(current)
        if parsed.scheme != "https" or not parsed.hostname:
            raise AttachmentError("Attachment URL must be an https:// URL")
        if parsed.username or parsed.password:
            raise AttachmentError("Attachment URL must not carry credentials")
        path = parsed.path or "/"
        if parsed.query:
            path += "?" + parsed.query
        remaining = max(0.5, deadline - time.monotonic())
        pool = outbound.urllib3_pool(
            "https",
            parsed.hostname,
            parsed.port or 443,
            cert_reqs="CERT_REQUIRED",
            timeout=urllib3.Timeout(connect=min(5.0, remaining), read=remaining),
            retries=False,
        )
        try:
            response = pool.urlopen(
                "GET",
                path,
                headers={"User-Agent": "Owlat attachment fetcher"},
                preload_content=False,
                redirect=False,
            )
        except outbound.OutboundRefused as exc:
            pool.close()
            raise AttachmentError(f"Attachment URL is not allowed: {exc}") from exc
        except urllib3.exceptions.HTTPError as exc:
            pool.close()
            raise AttachmentError(f"Attachment could not be fetched: {exc}") from exc
        try:
            if response.status in (301, 302, 303, 307, 308):
                location = response.headers.get("Location")
                if not location:
                    raise AttachmentError("Attachment redirect without a location")
                current = urljoin(current, location)
                continue
            if response.status != 200:
                raise AttachmentError(f"Attachment URL answered {response.status}")
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise AttachmentError("Total attachment size exceeds 10MB limit")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.stream(64 * 1024):
                size += len(chunk)
                if size > max_bytes:
                    raise AttachmentError("Total attachment size exceeds 10MB limit")
                if time.monotonic() > deadline:
                    raise AttachmentError("Attachment download took too long")
                chunks.append(chunk)
            content_type = response.headers.get("Content-Type")
            return b"".join(chunks), (content_type.split(";")[0].strip() if content_type else None)
        finally:
            response.release_conn()
            pool.close()
    raise AttachmentError("Too many redirects while fetching an attachment")


def load_attachments(
    send: Any, *, fetch: Callable[..., tuple[bytes, str | None]] = fetch_url
) -> list[Attachment]:
    """The attachments of a transactional send, URLs fetched now, within the 10 MiB total."""
    out: list[Attachment] = []
    total = 0
    for row in send.attachments.all():
        if row.content is not None:
            content = bytes(row.content)
            content_type = row.content_type
        elif row.url:
            content, fetched_type = fetch(row.url, max_bytes=MAX_TOTAL_BYTES - total)
            content_type = row.content_type or fetched_type
        else:
            continue
        total += len(content)
        if total > MAX_TOTAL_BYTES:
            raise AttachmentError("Total attachment size exceeds 10MB limit")
        out.append(Attachment(row.filename, content, content_type or "application/octet-stream"))
    return out
