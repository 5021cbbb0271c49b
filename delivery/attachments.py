"""Attachments of transactional sends (API-22): stored base64 content, or an `https://` URL fetched safely by
the worker at send time — https only, public addresses only (checked on the address actually connected to, so
DNS rebinding cannot reach a private host), redirects re-checked, size and time limits."""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlparse

from delivery.messages import Attachment

MAX_TOTAL_BYTES = 10 * 1024 * 1024  # API-22: decoded total ≤ 10 MiB
FETCH_TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 3

Resolver = Callable[[str, int], list[str]]


class AttachmentError(Exception):
    pass


def _resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


def is_public_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str, *, resolver: Resolver = _resolve) -> tuple[str, int, str]:
    """(host, port, a public address) for an https URL, else AttachmentError."""
    parsed = urlparse(url)
    if parsed.scheme != "https" or not parsed.hostname:
        raise AttachmentError("Attachment URL must be an https:// URL")
    if parsed.username or parsed.password:
        raise AttachmentError("Attachment URL must not carry credentials")
    host = parsed.hostname
    port = parsed.port or 443
    try:
        addresses = resolver(host, port)
    except OSError as exc:
        raise AttachmentError(f"Attachment host {host} could not be resolved") from exc
    if not addresses or not all(is_public_address(a) for a in addresses):
        raise AttachmentError(f"Attachment host {host} is not a public address")
    return host, port, addresses[0]


def fetch_url(
    url: str,
    *,
    max_bytes: int = MAX_TOTAL_BYTES,
    timeout: float = FETCH_TIMEOUT_SECONDS,
    resolver: Resolver = _resolve,
) -> tuple[bytes, str | None]:
    """GET an https URL on a public address; returns (content, content type)."""
    import urllib3

    deadline = time.monotonic() + timeout
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        host, port, address = check_url(current, resolver=resolver)
        parsed = urlparse(current)
        path = parsed.path or "/"
        if parsed.query:
            path += "?" + parsed.query
        remaining = max(0.5, deadline - time.monotonic())
        pool = urllib3.HTTPSConnectionPool(
            address,
            port,
            server_hostname=host,
            assert_hostname=host,
            cert_reqs="CERT_REQUIRED",
            timeout=urllib3.Timeout(connect=min(5.0, remaining), read=remaining),
            retries=False,
        )
        try:
            response = pool.urlopen(
                "GET",
                path,
                headers={"Host": host, "User-Agent": "Owlat attachment fetcher"},
                preload_content=False,
                redirect=False,
            )
        except urllib3.exceptions.HTTPError as exc:
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
