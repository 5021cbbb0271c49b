"""The outbound-HTTP guard: every request to a URL a tenant entered goes through here (SSRF protection).

A tenant-entered URL (a customer webhook endpoint, a transactional attachment URL, a future fetch) may only
reach a *public* address. The guard refuses loopback, private (RFC 1918, unique-local), link-local (which
includes the cloud metadata address 169.254.169.254), shared, multicast, unspecified and reserved addresses —
IPv6 addresses that embed IPv4 addresses (IPv4-mapped, NAT64, 6to4, Teredo) are judged by those too — and the
app's own host (`SITE_URL`'s host and port, and the names in `ALLOWED_HOSTS`). It checks twice:

* **At save time** — `validate_outbound_url` is a Django validator (a model field's `validators=[...]`, a form
  field, a DRF serializer field), so a bad URL answers a form/field error naming the field. It resolves the host
  name; a name that does not resolve (yet) is accepted here and judged at connect time.
* **At connect time** — the guarded clients resolve the host themselves, refuse the connection unless *every*
  address is public, and connect to the address they checked (the IP is pinned: DNS rebinding between the
  check and the connect cannot slip through). TLS still verifies the certificate against the host name. The
  check runs on every connection, so it also covers every redirect hop. Proxies from the environment are
  ignored (a proxy would resolve the name itself).

Allowed regardless of the address (but never the app's own host):

* hosts listed in the setting `OUTBOUND_ALLOWED_HOSTS` (environment, comma-separated; `host` or `host:port`)
  — how tests reach their loopback receivers;
* hosts of URLs the operator set in the environment: the settings named in `OUTBOUND_OPERATOR_URL_SETTINGS`
  (e.g. `POSTHOG_HOST`, `EMAIL_URL`, an LLM base URL). An app with its own operator URL adds its setting's
  name to that list (settings.py), or the host to `OUTBOUND_ALLOWED_HOSTS`.

Usage::

    from owlat import outbound

    # save time: a model field / form field / serializer field
    url = models.URLField(validators=[outbound.validate_outbound_url])
    url = serializers.URLField(validators=[outbound.validate_outbound_url])
    outbound.check_url(url, schemes=("https",))        # raises OutboundRefused (a ValueError) with a reason

    # connect time, requests
    with outbound.requests_session() as session:
        response = session.post(url, json=payload, timeout=10, allow_redirects=False)

    # connect time, httpx (the `httpx2` distribution, which openai uses)
    with outbound.httpx_client(timeout=10) as client:   # or httpx_async_client(), or the transports
        response = client.get(url)
    openai.OpenAI(base_url=..., http_client=outbound.httpx_client())

A refused connection raises `OutboundRefused` before any byte is sent, from `session.post(...)` /
`client.get(...)` directly (not wrapped in the libraries' own exceptions). Its message names the host, never
what is listening there; log that message, not a response.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3
from django.conf import settings
from django.core.exceptions import ValidationError
from requests.adapters import HTTPAdapter
from urllib3 import connection as urllib3_connection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

Resolver = Callable[[str, int], list[str]]

DEFAULT_SCHEMES = ("http", "https")


class OutboundRefused(ValueError):
    """A tenant-entered URL points at an address Owlat must not reach."""


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (IPv4 and IPv6), in the resolver's order, without duplicates."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for info in infos:
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


#: IPv6 ranges that embed an IPv4 address, which is what the packet reaches in the end: NAT64's well-known
#: prefix (RFC 6052; the IPv4 in the last 32 bits), NAT64's local-use /96 at the start of 64:ff9b:1::/48 (RFC 8215),
#: 6to4 (RFC 3056, bits 16–48) and Teredo (RFC 4380: the server's IPv4 and the client's, inverted).
NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
NAT64_LOCAL_USE_96 = ipaddress.IPv6Network("64:ff9b:1::/96")
#: refused whatever they embed: IPv4-compatible addresses (::a.b.c.d, deprecated by RFC 4291) and site-local
#: addresses (fec0::/10, deprecated by RFC 3879), both of which Python's `is_global` counts as global.
NEVER_PUBLIC_V6 = (ipaddress.IPv6Network("::/96"), ipaddress.IPv6Network("fec0::/10"))


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses an IPv6 address carries (IPv4-mapped, NAT64, 6to4, Teredo), [] when it carries none, or
    None when it is in a range whose embedding cannot be known (a local-use NAT64 prefix longer than /96's)."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in NAT64_WELL_KNOWN or ip in NAT64_LOCAL_USE_96:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip in NAT64_LOCAL_USE:
        return None
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return []


def is_public_address(address: str) -> bool:
    """True for a globally routable unicast address; False for loopback, private, link-local, reserved, … An
    IPv6 address that embeds IPv4 addresses (IPv4-mapped, NAT64, 6to4, Teredo) is public only when every
    embedded address is too (and the IPv6 address itself, except the IPv4-mapped and NAT64 forms, which are
    judged by their IPv4 alone)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in network for network in NEVER_PUBLIC_V6):
            return False
        embedded = embedded_ipv4(ip)
        if embedded is None or not all(_is_public(v4) for v4 in embedded):
            return False
        if ip.ipv4_mapped is not None or ip in NAT64_WELL_KNOWN or ip in NAT64_LOCAL_USE_96:
            return True
    return _is_public(ip)


def _is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return ip.is_global and not ip.is_multicast


def _default_port(scheme: str) -> int:
    return 443 if scheme in ("https", "wss") else 80


def _url_host_port(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    try:
        port = parts.port or _default_port(parts.scheme.lower())
    except ValueError:
        port = _default_port(parts.scheme.lower())
    return parts.scheme.lower(), host, port


def _own_hosts() -> tuple[set[tuple[str, int]], set[str]]:
    """(host, port) of SITE_URL, and the literal names of ALLOWED_HOSTS (wildcards excluded)."""
    own: set[tuple[str, int]] = set()
    site = getattr(settings, "SITE_URL", "")
    if site:
        _, host, port = _url_host_port(site)
        if host:
            own.add((host, port))
    names = {
        h.lower().rstrip(".")
        for h in getattr(settings, "ALLOWED_HOSTS", [])
        if h and "*" not in h and not h.startswith(".")
    }
    return own, names


def is_own_host(host: str, port: int) -> bool:
    own, names = _own_hosts()
    host = host.lower().rstrip(".")
    return (host, port) in own or host in names


def _allowed_entries() -> set[str]:
    entries = {str(h).lower().strip() for h in getattr(settings, "OUTBOUND_ALLOWED_HOSTS", []) if h}
    for name in getattr(settings, "OUTBOUND_OPERATOR_URL_SETTINGS", ()):
        value = getattr(settings, name, "") or ""
        if isinstance(value, str) and "//" in value:
            _, host, port = _url_host_port(value)
            if host:
                entries.add(f"{host}:{port}")
    return entries


def is_allowed_host(host: str, port: int) -> bool:
    """True if the operator allowed this host (any port, or this port) whatever its address."""
    host = host.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    entries = _allowed_entries()
    return host in entries or f"{host}:{port}" in entries or f"[{host}]:{port}" in entries


def connect_addresses(host: str, port: int, *, resolver: Resolver | None = None) -> list[str]:
    """The addresses a guarded client may connect to for `host:port`, else OutboundRefused.

    The caller must connect to one of the returned addresses (never resolve again): that is the pin.
    """
    host = host.rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if is_own_host(host, port):
        raise OutboundRefused(f"{host} is this application's own host")
    try:
        addresses = (resolver or resolve)(host, port)
    except (OSError, UnicodeError) as exc:
        raise OutboundRefused(f"{host} could not be resolved") from exc
    if not addresses:
        raise OutboundRefused(f"{host} could not be resolved")
    if is_allowed_host(host, port):
        return addresses
    if not all(is_public_address(a) for a in addresses):
        raise OutboundRefused(f"{host} is not a public address")
    return addresses


def check_url(
    url: str,
    *,
    schemes: Iterable[str] = DEFAULT_SCHEMES,
    resolver: Resolver | None = None,
    require_resolution: bool = False,
) -> None:
    """Save-time check of a tenant-entered URL; raises OutboundRefused with a reason.

    A name that does not resolve is accepted unless `require_resolution` (connect time will judge it).
    """
    schemes = tuple(schemes)
    try:
        parts = urlsplit(url)
        scheme, host, port = _url_host_port(url)
    except ValueError as exc:
        raise OutboundRefused("not a valid URL") from exc
    if scheme not in schemes:
        raise OutboundRefused("must be an " + " or ".join(f"{s}://" for s in schemes) + " URL")
    if not host:
        raise OutboundRefused("must name a host")
    if parts.username or parts.password:
        raise OutboundRefused("must not carry credentials")
    try:
        connect_addresses(host, port, resolver=resolver)
    except OutboundRefused as exc:
        if not require_resolution and str(exc).endswith("could not be resolved"):
            return
        raise


def validate_outbound_url(value: str) -> None:
    """Django validator (model, form or serializer field): http(s) URL on a public address."""
    try:
        check_url(value)
    except OutboundRefused as exc:
        raise ValidationError(
            "This URL is not allowed: %(reason)s.", code="outbound_refused", params={"reason": exc}
        )


def validate_outbound_https_url(value: str) -> None:
    """Django validator: https URL on a public address."""
    try:
        check_url(value, schemes=("https",))
    except OutboundRefused as exc:
        raise ValidationError(
            "This URL is not allowed: %(reason)s.", code="outbound_refused", params={"reason": exc}
        )


# --- connect time: requests / urllib3 ----------------------------------------------------------------------


def _guarded_new_conn(conn: Any) -> socket.socket:
    addresses = connect_addresses(conn._dns_host, conn.port)
    last: OSError | None = None
    for address in addresses:
        try:
            return urllib3_connection.connection.create_connection(
                (address, conn.port),
                conn.timeout,
                source_address=conn.source_address,
                socket_options=conn.socket_options,
            )
        except TimeoutError as exc:
            raise urllib3.exceptions.ConnectTimeoutError(
                conn, f"Connection to {conn.host} timed out. (connect timeout={conn.timeout})"
            ) from exc
        except OSError as exc:
            last = exc
    raise urllib3.exceptions.NewConnectionError(conn, f"Failed to establish a new connection: {last}")


class GuardedHTTPConnection(urllib3_connection.HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _guarded_new_conn(self)


class GuardedHTTPSConnection(urllib3_connection.HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return _guarded_new_conn(self)


class GuardedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """A requests transport adapter whose connections go through `connect_addresses` (no proxies)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": GuardedHTTPConnectionPool,
            "https": GuardedHTTPSConnectionPool,
        }

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        raise OutboundRefused("outbound requests to tenant URLs do not use proxies")


def requests_session() -> requests.Session:
    """A requests Session whose every connection (redirects included) is guarded and pinned."""
    session = requests.Session()
    session.trust_env = False  # no proxies or netrc from the environment
    adapter = GuardedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def urllib3_pool(scheme: str, host: str, port: int, **kwargs: Any) -> HTTPConnectionPool:
    """A single guarded urllib3 connection pool (for callers that use urllib3 directly)."""
    cls = GuardedHTTPSConnectionPool if scheme == "https" else GuardedHTTPConnectionPool
    return cls(host, port, **kwargs)


# --- connect time: httpx (httpx2 / httpcore2) ---------------------------------------------------------------


def _httpx_backends() -> tuple[type, type]:
    import httpcore2

    class GuardedBackend(httpcore2.NetworkBackend):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, **kwargs: Any) -> Any:
            last: Exception | None = None
            for address in connect_addresses(host, port):
                try:
                    return self._inner.connect_tcp(address, port, timeout=timeout, **kwargs)
                except httpcore2.ConnectError as exc:
                    last = exc
            assert last is not None
            raise last

        def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            raise OutboundRefused("unix sockets are not allowed")

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    class AsyncGuardedBackend(httpcore2.AsyncNetworkBackend):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        async def connect_tcp(self, host: str, port: int, timeout: float | None = None, **kwargs: Any) -> Any:
            import anyio

            addresses = await anyio.to_thread.run_sync(connect_addresses, host, port)
            last: Exception | None = None
            for address in addresses:
                try:
                    return await self._inner.connect_tcp(address, port, timeout=timeout, **kwargs)
                except httpcore2.ConnectError as exc:
                    last = exc
            assert last is not None
            raise last

        async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            raise OutboundRefused("unix sockets are not allowed")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    return GuardedBackend, AsyncGuardedBackend


def httpx_transport(**kwargs: Any) -> Any:
    """An `httpx2.HTTPTransport` whose connections are guarded and pinned (no proxies)."""
    import httpcore2
    import httpx2

    kwargs.update(trust_env=False, proxy=None, uds=None)
    transport = httpx2.HTTPTransport(**kwargs)
    if not isinstance(transport._pool, httpcore2.ConnectionPool):  # pragma: no cover - proxies are off
        raise OutboundRefused("unexpected httpx pool")
    guarded, _ = _httpx_backends()
    transport._pool._network_backend = guarded(transport._pool._network_backend)
    return transport


def httpx_async_transport(**kwargs: Any) -> Any:
    """An `httpx2.AsyncHTTPTransport` whose connections are guarded and pinned (no proxies)."""
    import httpcore2
    import httpx2

    kwargs.update(trust_env=False, proxy=None, uds=None)
    transport = httpx2.AsyncHTTPTransport(**kwargs)
    if not isinstance(transport._pool, httpcore2.AsyncConnectionPool):  # pragma: no cover
        raise OutboundRefused("unexpected httpx pool")
    _, guarded = _httpx_backends()
    transport._pool._network_backend = guarded(transport._pool._network_backend)
    return transport


def httpx_client(**kwargs: Any) -> Any:
    """An `httpx2.Client` with a guarded transport (redirect hops are guarded too)."""
    import httpx2

    return httpx2.Client(transport=httpx_transport(), trust_env=False, **kwargs)


def httpx_async_client(**kwargs: Any) -> Any:
    """An `httpx2.AsyncClient` with a guarded transport."""
    import httpx2

    return httpx2.AsyncClient(transport=httpx_async_transport(), trust_env=False, **kwargs)
