"""The outbound-HTTP guard (owlat/outbound.py): tenant-entered URLs reach public addresses only, checked at
save time and at connect time with the resolved address pinned, for requests and httpx alike."""

from __future__ import annotations

import httpx2
import pytest
import requests
from django.core.exceptions import ValidationError

from owlat import outbound

PUBLIC = "93.184.216.34"


@pytest.fixture
def dns(monkeypatch):
    """A programmable resolver: `dns["name"] = [addresses]` (a list of lists answers one per call)."""
    table: dict[str, list] = {}
    real = outbound.resolve

    def fake(host, port):
        if host not in table:
            return real(host, port)
        answer = table[host]
        if answer and isinstance(answer[0], list):
            return answer.pop(0) if len(answer) > 1 else answer[0]
        return answer

    monkeypatch.setattr(outbound, "resolve", fake)
    return table


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "240.0.0.1",
        "224.0.0.1",
        "::1",
        "::",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "not-an-ip",
        # IPv4 embedded in IPv6: NAT64 (well-known and local-use prefixes), 6to4, Teredo
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b::c0a8:1",  # NAT64 of 192.168.0.1
        "64:ff9b:1::7f00:1",  # local-use NAT64 /96 of 127.0.0.1
        "64:ff9b:1::a00:1",  # local-use NAT64 /96 of 10.0.0.1
        "64:ff9b:1:7f00:0:100::",  # local-use NAT64 with a longer prefix: the embedding cannot be known
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1 (inverted in the last 32 bits)
        "2001:0:7f00:1::1",  # Teredo, server 127.0.0.1
        "2001:0:5db8:d822:8000:63bf:a2ff:2c50",  # Teredo of public addresses: Teredo is never global
        "::7f00:1",  # IPv4-compatible (deprecated) 127.0.0.1
        "::5db8:d822",  # IPv4-compatible, even of a public address
        "fec0::1",  # site-local (deprecated)
    ],
)
def test_non_public_addresses(address):
    assert not outbound.is_public_address(address)


@pytest.mark.parametrize(
    "address",
    [
        PUBLIC,
        "2606:2800:220:1:248:1893:25c8:1946",
        "::ffff:93.184.216.34",
        "64:ff9b::5db8:d822",  # NAT64 of 93.184.216.34
        "64:ff9b:1::5db8:d822",  # local-use NAT64 /96 of 93.184.216.34
        "2002:5db8:d822::1",  # 6to4 of 93.184.216.34
    ],
)
def test_public_addresses(address):
    assert outbound.is_public_address(address)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://[::1]:9000/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/",
        "http://localhost:5432/",
        "http://2130706433/",  # 127.0.0.1 as one number
        "http://0x7f.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::]/",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        "http://127.0.0.1:8000/api/v1/contacts",
    ],
)
def test_save_time_refuses_local_targets(url):
    with pytest.raises(outbound.OutboundRefused):
        outbound.check_url(url)
    with pytest.raises(ValidationError) as info:
        outbound.validate_outbound_url(url)
    assert "This URL is not allowed" in info.value.messages[0]


def test_save_time_refuses_a_name_with_any_private_address(dns):
    dns["mixed.example"] = [PUBLIC, "10.0.0.1"]
    with pytest.raises(outbound.OutboundRefused, match="not a public address"):
        outbound.check_url("https://mixed.example/x")


def test_save_time_accepts_public_and_unresolvable_names(dns):
    dns["hooks.example"] = [PUBLIC]
    outbound.check_url("https://hooks.example/x")
    outbound.check_url("https://does-not-resolve.invalid/x")  # judged again at connect time
    with pytest.raises(outbound.OutboundRefused, match="resolved"):
        outbound.check_url("https://does-not-resolve.invalid/x", require_resolution=True)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://files.example/a", "must be an http:// or https:// URL"),
        ("https://user:pw@files.example/a", "credentials"),
        ("https:///nohost", "must name a host"),
    ],
)
def test_save_time_shape(url, reason):
    with pytest.raises(outbound.OutboundRefused, match=reason):
        outbound.check_url(url)


def test_own_host_is_refused_even_when_allowed(settings, dns):
    settings.SITE_URL = "https://owlat.example.com"
    settings.ALLOWED_HOSTS = ["owlat.example.com", "admin.owlat.example.com", "*.wild.example"]
    settings.OUTBOUND_ALLOWED_HOSTS = ["owlat.example.com"]
    dns["owlat.example.com"] = [PUBLIC]
    dns["admin.owlat.example.com"] = [PUBLIC]
    for url in ("https://owlat.example.com/api/v1/contacts", "https://admin.owlat.example.com/"):
        with pytest.raises(outbound.OutboundRefused, match="own host"):
            outbound.check_url(url)


def test_allowed_hosts_and_operator_urls_pass(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1:9999", "localhost"]
    settings.OUTBOUND_OPERATOR_URL_SETTINGS = ["LLM_BASE_URL"]
    settings.LLM_BASE_URL = "http://127.0.0.1:11434/v1"
    outbound.check_url("http://127.0.0.1:9999/hook")
    outbound.check_url("http://localhost:1234/")
    outbound.check_url("http://127.0.0.1:11434/v1/chat")
    with pytest.raises(outbound.OutboundRefused):
        outbound.check_url("http://127.0.0.1:9998/hook")  # another port of the same host


# --- connect time ------------------------------------------------------------------------------------------


def test_requests_refuses_loopback_before_connecting(http_receiver):
    with outbound.requests_session() as session, pytest.raises(outbound.OutboundRefused):
        session.post(http_receiver.url + "/hook", data=b"x", timeout=5)
    assert http_receiver.requests == []


def test_httpx_refuses_loopback_before_connecting(http_receiver):
    with outbound.httpx_client(timeout=5) as client, pytest.raises(outbound.OutboundRefused):
        client.post(http_receiver.url + "/hook", content=b"x")
    assert http_receiver.requests == []


async def _async_post(url):
    async with outbound.httpx_async_client(timeout=5) as client:
        return await client.post(url, content=b"x")


def test_httpx_async_refuses_loopback(http_receiver):
    import anyio

    with pytest.raises(outbound.OutboundRefused):
        anyio.run(_async_post, http_receiver.url + "/hook")
    assert http_receiver.requests == []


def test_dns_rebinding_is_caught_at_connect_time(dns, http_receiver):
    # Given a name that resolves to a public address when the URL is saved …
    dns["rebind.example"] = [[PUBLIC], ["127.0.0.1"]]
    url = f"http://rebind.example:{http_receiver.port}/hook"
    outbound.validate_outbound_url(url)
    # … and to loopback when the request is made: refused, nothing reaches the loopback server
    with outbound.requests_session() as session, pytest.raises(outbound.OutboundRefused):
        session.post(url, data=b"x", timeout=5)
    with outbound.httpx_client(timeout=5) as client, pytest.raises(outbound.OutboundRefused):
        client.post(url, content=b"x")
    assert http_receiver.requests == []


def test_the_connection_goes_to_the_address_that_was_checked(dns, settings, http_receiver):
    # the name is allowed, so its (loopback) address is accepted; the client connects to exactly the address
    # the guard resolved (the pin), while Host and TLS keep the name
    settings.OUTBOUND_ALLOWED_HOSTS = ["pinned.example"]
    dns["pinned.example"] = ["127.0.0.1"]
    url = f"http://pinned.example:{http_receiver.port}/hook"
    with outbound.requests_session() as session:
        assert session.post(url, data=b"a", timeout=5).status_code == 200
    with outbound.httpx_client(timeout=5) as client:
        assert client.post(url, content=b"b").status_code == 200
    reqs = http_receiver.wait_for(2)
    assert [r.headers["host"] for r in reqs] == [f"pinned.example:{http_receiver.port}"] * 2


def test_redirects_are_guarded_hop_by_hop(settings, http_receiver):
    # the first hop is allowed; it redirects to a loopback port that is not: the second hop is refused
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{http_receiver.port}"]
    from testsupport import Reply

    http_receiver.default = Reply(302, b"", {"Location": "http://localhost:1/secret"})
    with outbound.requests_session() as session, pytest.raises(outbound.OutboundRefused):
        session.get(http_receiver.url + "/start", timeout=5)
    with (
        outbound.httpx_client(timeout=5, follow_redirects=True) as client,
        pytest.raises(outbound.OutboundRefused),
    ):
        client.get(http_receiver.url + "/start")


def test_proxies_from_the_environment_are_ignored(monkeypatch, settings, http_receiver):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    monkeypatch.setenv("HTTP_PROXY", "http://10.9.9.9:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://10.9.9.9:3128")
    with outbound.requests_session() as session:
        assert session.get(http_receiver.url + "/x", timeout=5).status_code == 200
    with outbound.httpx_client(timeout=5) as client:
        assert client.get(http_receiver.url + "/y").status_code == 200


def test_plain_clients_are_not_affected(http_receiver):
    # the guard is opt-in per client: operator integrations (PostHog, ESP APIs) keep their own clients
    assert requests.get(http_receiver.url + "/plain", timeout=5).status_code == 200
    assert httpx2.get(http_receiver.url + "/plain").status_code == 200
