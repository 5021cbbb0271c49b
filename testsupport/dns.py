"""A DNS stand-in for tests (issue 11): a UDP server on loopback that answers from a dict, built with dnspython's
message API. No network: point the application's resolver at it (`DNS_NAMESERVERS`, set by the `dns_stand_in`
fixture, which also passes it on to `workers`).

    dns_stand_in.publish(domain.dns_records)             # every record the operator was told to publish
    dns_stand_in.set("_dmarc.acme.test", "TXT", ["v=DMARC1; p=reject"])
    dns_stand_in.remove("acme.test", "TXT")
    dns_stand_in.servfail.add("acme.test")               # SERVFAIL for that name
    dns_stand_in.silent.add("acme.test")                 # never answer (the client times out)

Names are matched case-insensitively without the final dot. A name with records of another type answers
NOERROR without answers; an unknown name answers NXDOMAIN. Long TXT values are split into 255-octet strings, as
real zones publish a 2048-bit DKIM key.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest


def _norm(name: str) -> str:
    return name.strip().rstrip(".").lower()


def _txt_zone_text(value: str) -> str:
    raw = value.encode("utf-8")
    chunks = [raw[i : i + 255] for i in range(0, len(raw), 255)] or [b""]
    return " ".join(
        '"' + c.decode("utf-8", "replace").replace("\\", "\\\\").replace('"', '\\"') + '"' for c in chunks
    )


class DnsStandIn:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.records: dict[tuple[str, str], list[str]] = {}
        self.servfail: set[str] = set()
        self.silent: set[str] = set()
        self.queries: list[tuple[str, str]] = []
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- zone ------------------------------------------------------------------------------------------------
    def set(self, name: str, rdtype: str, values: Iterable[str]) -> None:
        with self._lock:
            self.records[(_norm(name), rdtype.upper())] = list(values)

    def add(self, name: str, rdtype: str, value: str) -> None:
        with self._lock:
            self.records.setdefault((_norm(name), rdtype.upper()), []).append(value)

    def remove(self, name: str, rdtype: str | None = None) -> None:
        with self._lock:
            for key in [k for k in self.records if k[0] == _norm(name) and rdtype in (None, k[1])]:
                del self.records[key]

    def publish(self, records: Iterable[dict[str, Any]], *, skip: Iterable[str] = ()) -> None:
        """Publish records in the `Domain.dns_records` form (`type`, `name`, `value`), except the `skip` keys."""
        skipped = set(skip)
        for r in records:
            if r.get("key") not in skipped:
                self.add(r["name"], r["type"], r["value"])

    @property
    def nameserver(self) -> str:
        return f"{self.host}:{self.port}"

    # -- server ----------------------------------------------------------------------------------------------
    def start(self) -> DnsStandIn:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((self.host, 0))
        sock.settimeout(0.2)
        self._sock = sock
        self.port = sock.getsockname()[1]
        self._running = True
        self._thread = threading.Thread(target=self._serve, name="dns-stand-in", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._sock is not None:
            self._sock.close()

    def _serve(self) -> None:
        assert self._sock is not None
        while self._running:
            try:
                data, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                reply = self.answer(dns.message.from_wire(data))
            except Exception:  # a malformed query: no answer, like a real server dropping garbage
                continue
            if reply is not None:
                self._sock.sendto(reply.to_wire(), peer)

    def answer(self, query: dns.message.Message) -> dns.message.Message | None:
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        if not query.question:
            response.set_rcode(dns.rcode.FORMERR)
            return response
        question = query.question[0]
        name = _norm(question.name.to_text())
        rdtype = dns.rdatatype.to_text(question.rdtype)
        with self._lock:
            self.queries.append((name, rdtype))
            if name in self.silent:
                return None
            if name in self.servfail:
                response.set_rcode(dns.rcode.SERVFAIL)
                return response
            values = list(self.records.get((name, rdtype), []))
            known = any(k[0] == name for k in self.records)
        if values:
            texts = [_txt_zone_text(v) if rdtype == "TXT" else _absolute(rdtype, v) for v in values]
            response.answer.append(
                dns.rrset.from_text_list(question.name, 300, dns.rdataclass.IN, question.rdtype, texts)
            )
        elif not known:
            response.set_rcode(dns.rcode.NXDOMAIN)
        return response


def _absolute(rdtype: str, value: str) -> str:
    """Host names in MX/CNAME values as absolute names."""
    parts = value.split()
    if rdtype in ("MX", "CNAME", "NS") and parts and not parts[-1].endswith("."):
        parts[-1] += "."
    return " ".join(parts)


@pytest.fixture
def dns_stand_in(settings):
    """A loopback DNS server answering from a dict; the application's resolver (`DNS_NAMESERVERS`) points at it."""
    server = DnsStandIn().start()
    settings.DNS_NAMESERVERS = [server.nameserver]
    settings.DNS_TIMEOUT_SECONDS = 1.0
    try:
        yield server
    finally:
        server.stop()
