"""Who sent an inbound message, as far as the mail itself can prove it: DMARC alignment (RFC 7489 section 3.1).

A sender is *authenticated* only when the From domain is vouched for:
- the installation's MTA wrote a trusted `Authentication-Results` field (`inbox.authresults`) that says
  `dmarc=pass`, or an SPF or DKIM pass whose domain (`smtp.mailfrom`, `header.d`) is aligned with the From domain
  (relaxed: the same organizational domain, from the public suffix list), and no `dmarc=fail`;
- or, when the MTA gave no trusted result, a DKIM signature that dkimpy verifies (key from DNS through the one
  resolver, `owlat.domains.resolver`) whose `d=` is aligned with the From domain.

Anything else — DKIM of an unrelated domain, SPF of the bounce domain only, results a client typed in without
DMARC — is unauthenticated, and the route step never sends such a message's reply automatically.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass

from inbox.authresults import AuthenticationResults

logger = logging.getLogger(__name__)
#: a message longer than this is not DKIM-verified here (the receive path bounds mail size anyway)
DKIM_MAX_BYTES = 10 * 1024 * 1024
_DKIM_D = re.compile(rb"(?:^|;)\s*d\s*=\s*([^;\s]+)", re.IGNORECASE)


@dataclass(frozen=True)
class SenderAuth:
    authenticated: bool
    #: how it was decided, for reviewers: `dmarc=pass`, `dkim aligned (example.com)`, `unaligned dkim (evil.test)`
    detail: str


UNAUTHENTICATED = SenderAuth(False, "no authentication results")


@functools.cache
def _psl():
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def organizational_domain(domain: str) -> str:
    """The registrable domain of `domain` (`mail.example.co.uk` → `example.co.uk`); the domain itself when the
    public suffix list knows no registrable part."""
    domain = (domain or "").strip().lower().rstrip(".")
    if not domain:
        return ""
    return _psl().privatesuffix(domain) or domain


def aligned(domain: str | None, from_domain: str) -> bool:
    """DMARC relaxed alignment: both names share their organizational domain."""
    domain = (domain or "").strip().lower().rstrip(".").rpartition("@")[2]
    from_domain = (from_domain or "").strip().lower().rstrip(".")
    if not domain or not from_domain:
        return False
    return organizational_domain(domain) == organizational_domain(from_domain)


def from_results(results: AuthenticationResults, from_domain: str) -> SenderAuth:
    """The verdict of the installation's trusted `Authentication-Results` for a From domain."""
    if not results.trusted:
        return UNAUTHENTICATED
    dmarc = results.result("dmarc")
    if dmarc == "fail":
        return SenderAuth(False, "dmarc=fail")
    if dmarc == "pass":
        return SenderAuth(True, "dmarc=pass")
    for r in results.results_of("dkim"):
        if r.result == "pass" and aligned(r.prop("header.d") or r.prop("header.i"), from_domain):
            return SenderAuth(True, f"dkim aligned ({r.prop('header.d') or r.prop('header.i')})")
    for r in results.results_of("spf"):
        if r.result == "pass" and aligned(r.prop("smtp.mailfrom") or r.prop("smtp.helo"), from_domain):
            return SenderAuth(True, f"spf aligned ({r.prop('smtp.mailfrom') or r.prop('smtp.helo')})")
    passed = [
        f"{r.method} {r.prop('header.d') or r.prop('smtp.mailfrom') or '?'}"
        for r in results.results
        if r.method in ("dkim", "spf") and r.result == "pass"
    ]
    if passed:
        return SenderAuth(False, f"not aligned with {from_domain}: {', '.join(passed)[:150]}")
    return SenderAuth(False, "no passing result")


def from_summary(summary: dict[str, str | None] | None) -> SenderAuth:
    """Results a client gave without their domains (the API): only `dmarc=pass` proves the From domain."""
    summary = summary or {}
    if summary.get("dmarc") == "pass":
        return SenderAuth(True, "dmarc=pass (reported)")
    return SenderAuth(False, "no dmarc=pass reported")


def _dnsfunc(name: bytes, timeout: int = 5) -> bytes:
    """dkimpy's DNS hook: the TXT record of `name` through the one resolver."""
    from owlat.domains.resolver import FOUND, lookup

    found = lookup(name.decode("ascii", "replace").rstrip("."), "TXT")
    if found.status != FOUND or not found.values:
        return b""
    return found.values[0].encode("utf-8")


def from_dkim_signature(raw: bytes, from_domain: str) -> SenderAuth:
    """Verify the message's first DKIM signature with dkimpy; authenticated when it verifies and its `d=` is
    aligned with the From domain. Never raises (a broken signature is simply no proof)."""
    if b"dkim-signature" not in raw[:200_000].lower() or len(raw) > DKIM_MAX_BYTES:
        return UNAUTHENTICATED
    import dkim

    try:
        verifier = dkim.DKIM(raw, timeout=5)
        ok = verifier.verify(dnsfunc=_dnsfunc)
        domain = (verifier.domain or b"").decode("ascii", "replace").lower()
    except Exception as exc:  # dkimpy raises its own errors and ValueError on malformed signatures
        logger.info("DKIM verification failed: %s", exc)
        return SenderAuth(False, "dkim signature does not verify")
    if not ok:
        return SenderAuth(False, "dkim signature does not verify")
    if not aligned(domain, from_domain):
        return SenderAuth(False, f"dkim signature of {domain[:100]} is not aligned with {from_domain}")
    return SenderAuth(True, f"dkim verified and aligned ({domain[:100]})")


def sender_auth_of_raw(raw: bytes, results: AuthenticationResults, from_email: str) -> SenderAuth:
    """The verdict for a message received as RFC 5322 bytes: the MTA's trusted results when it wrote any, else
    the message's own DKIM signature."""
    from_domain = from_email.rpartition("@")[2].lower()
    if results.trusted:
        return from_results(results, from_domain)
    return from_dkim_signature(raw, from_domain)
