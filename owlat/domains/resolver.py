"""The one DNS resolver every outbound query of the domain checks goes through (dnspython).

`DNS_NAMESERVERS` (`ip` or `ip:port` each) points it at specific servers — in tests, the loopback stand-in of
`testsupport.dns`; empty, the system's `resolv.conf`. No cache: a "Check now" must see the current answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dns.exception
import dns.rdatatype
import dns.resolver
from django.conf import settings

FOUND = "found"
ABSENT = "absent"  # NXDOMAIN or no record of the type
ERROR = "error"  # timeout, SERVFAIL, refused: nothing can be concluded


@dataclass(frozen=True)
class Lookup:
    """One query's result: `status` ∈ found | absent | error, the record texts, and an error detail."""

    status: str
    values: tuple[str, ...] = field(default=())
    detail: str = ""


def _server(entry: str) -> tuple[str, int]:
    entry = entry.strip()
    if entry.startswith("["):  # [v6]:port
        host, _, port = entry[1:].partition("]:")
        return host, int(port or 53)
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, int(port)
    return entry, 53


def make_resolver() -> dns.resolver.Resolver:
    """A resolver for `DNS_NAMESERVERS` (else the system configuration), with EDNS0 so that 2048-bit DKIM keys
    fit one UDP answer."""
    servers = [_server(e) for e in settings.DNS_NAMESERVERS if e.strip()]
    resolver = dns.resolver.Resolver(configure=not servers)
    if servers:
        resolver.nameservers = [host for host, _ in servers]
        resolver.nameserver_ports = dict(servers)
        resolver.port = servers[0][1]
    resolver.timeout = settings.DNS_TIMEOUT_SECONDS
    resolver.lifetime = settings.DNS_TIMEOUT_SECONDS
    resolver.cache = None
    resolver.use_edns(0, 0, 1232)
    return resolver


def _text(rdata: dns.rdata.Rdata) -> str:
    if rdata.rdtype == dns.rdatatype.TXT:
        # a long TXT record (a DKIM key) arrives as several character strings: they are one value
        return b"".join(rdata.strings).decode("utf-8", "replace")
    if rdata.rdtype == dns.rdatatype.MX:
        return f"{rdata.preference} {rdata.exchange.to_text(omit_final_dot=True).lower()}"
    if rdata.rdtype == dns.rdatatype.CNAME:
        return rdata.target.to_text(omit_final_dot=True).lower()
    return rdata.to_text()


def lookup(name: str, rdtype: str, resolver: dns.resolver.Resolver | None = None) -> Lookup:
    """Query `name`/`rdtype`; never raises for DNS outcomes."""
    resolver = resolver or make_resolver()
    try:
        answer = resolver.resolve(name, rdtype, raise_on_no_answer=False, search=False)
    except dns.resolver.NXDOMAIN:
        return Lookup(ABSENT, detail="no such name (NXDOMAIN)")
    except dns.resolver.NoNameservers as exc:
        return Lookup(ERROR, detail=f"no name server answered: {exc.msg if hasattr(exc, 'msg') else exc}")
    except dns.exception.Timeout:
        return Lookup(ERROR, detail="DNS query timed out")
    except dns.exception.DNSException as exc:
        return Lookup(ERROR, detail=f"DNS error: {exc}")
    if answer.rrset is None:
        return Lookup(ABSENT, detail=f"no {rdtype} record")
    return Lookup(FOUND, tuple(_text(r) for r in answer.rrset))
