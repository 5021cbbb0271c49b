"""DKIM signatures for mail this installation hands to an SMTP server itself. Providers that sign for the
sender (the django-anymail ESPs) never call this.

Signing is never silently off. The sending domain (the From address's, of the sending organization) signs with
its newest live key whose DNS record has verified (`keys.signing_key`). A verified domain that should sign and
cannot — its keys are not published (verified yet) or cannot be decrypted — is *unsignable*: by default its mail
is refused (`SigningUnavailable`, the send fails with `DKIM_UNAVAILABLE` and the reason), with
`DKIM_UNSIGNABLE = "send_unsigned"` it goes out unsigned; either way the dashboard's "Needs attention" names the
domain (`owlat.domains.attention`). Two cases send unsigned by design, each with a warning on the dashboard and
in the campaign pre-flight (`dkim_warning`): a domain platform staff verified *without DKIM* (the override with
the key not published, `Domain.dkim_waived_at`), and a domain row without any key (created before keys existed;
the next check generates one).

Plans are cached per process for `CACHE_SECONDS` so a batch does not decrypt the key per message.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import dkim
from django.conf import settings

from owlat.domains import keys
from owlat.models import Domain, DomainStatus

logger = logging.getLogger(__name__)

CACHE_SECONDS = 60.0
#: Relaxed header and body canonicalization: survives the whitespace changes relays make.
CANONICALIZE = (b"relaxed", b"relaxed")

#: The header fields the signature covers when the message has them: the RFC 6376 §5.4.1 set plus the ones
#: receivers act on — the RFC 8058 one-click pair (which only counts when signed), `Feedback-ID`, `Precedence`,
#: `Auto-Submitted`. dkimpy's default list lacks the last four.
SIGNED_HEADERS = (
    b"from",
    b"sender",
    b"reply-to",
    b"to",
    b"cc",
    b"subject",
    b"date",
    b"message-id",
    b"in-reply-to",
    b"references",
    b"mime-version",
    b"content-type",
    b"content-transfer-encoding",
    b"list-id",
    b"list-unsubscribe",
    b"list-unsubscribe-post",
    b"feedback-id",
    b"precedence",
    b"auto-submitted",
)
#: Signed once more than present, so a second field of that name added on the way breaks the signature.
OVERSIGNED = (b"from", b"subject", b"list-unsubscribe", b"list-unsubscribe-post")

SIGN, UNSIGNED, UNSIGNABLE = "sign", "unsigned", "unsignable"
REFUSE, SEND_UNSIGNED = "refuse", "send_unsigned"


@dataclass(frozen=True)
class SigningPlan:
    """What to do for mail from one domain: `sign` (with `selector`, `pem`), `unsigned` (nothing to sign with
    by design: no verified domain of the organization, a row without keys, a staff waiver) or `unsignable`
    (it should sign and cannot; `reason` says why and what to do)."""

    action: str
    domain: bytes = b""
    selector: bytes = b""
    pem: bytes = b""
    reason: str = ""


class SigningUnavailable(Exception):
    """The sending domain should sign and cannot; the message names the domain and the fix."""

    code = "DKIM_UNAVAILABLE"


_cache: dict[tuple[str, str], tuple[float, SigningPlan]] = {}
_lock = threading.Lock()


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def installation_signs() -> bool:
    """This installation signs its own mail: the SMTP provider (`EMAIL_PROVIDER`); the ESPs sign for us."""
    return (getattr(settings, "EMAIL_PROVIDER", "") or "").strip().lower() == "smtp"


def unsignable_policy() -> str:
    return SEND_UNSIGNED if getattr(settings, "DKIM_UNSIGNABLE", REFUSE) == SEND_UNSIGNED else REFUSE


def domain_plan(domain: Domain) -> SigningPlan:
    """The plan for a verified domain row (the dashboard and the pre-flight use it too)."""
    try:
        name = domain.domain.strip().lower().encode("idna")
    except UnicodeError:
        return SigningPlan(UNSIGNABLE, reason=f'"{domain.domain}" is not a valid DKIM domain name.')
    live = keys.live_keys(domain)
    key = keys.signing_key(live)
    if key is None:
        if not live or domain.dkim_waived_at is not None:
            return SigningPlan(UNSIGNED, domain=name)
        return SigningPlan(
            UNSIGNABLE,
            domain=name,
            reason=f'The DKIM key of "{domain.domain}" is not published yet: publish its TXT record shown in '
            "Settings > Domains and press Check now.",
        )
    try:
        pem = keys.private_key_pem(key)
    except keys.UndecryptableKey as exc:
        return SigningPlan(UNSIGNABLE, domain=name, reason=f'"{domain.domain}": {exc}')
    return SigningPlan(SIGN, domain=name, selector=key.selector.encode("ascii"), pem=pem)


def _load(organization_id: Any, domain_name: str) -> SigningPlan:
    domain = Domain.objects.filter(
        organization_id=organization_id, domain__iexact=domain_name, status=DomainStatus.VERIFIED
    ).first()
    return SigningPlan(UNSIGNED) if domain is None else domain_plan(domain)


def signing_plan(organization_id: Any, from_email: str) -> SigningPlan:
    """The (cached) plan for mail of this organization from `from_email`."""
    domain_name = (from_email or "").rpartition("@")[2].strip().lower()
    if not domain_name or organization_id is None:
        return SigningPlan(UNSIGNED)
    cache_key = (str(organization_id), domain_name)
    now = time.monotonic()
    with _lock:
        hit = _cache.get(cache_key)
    if hit is not None and hit[0] >= now:
        return hit[1]
    plan = _load(organization_id, domain_name)
    with _lock:
        _cache[cache_key] = (now + CACHE_SECONDS, plan)
    return plan


def signing_problem(organization_id: Any, from_email: str) -> str | None:
    """Why mail from `from_email` would be refused for want of a signature (policy `refuse`), else None."""
    plan = signing_plan(organization_id, from_email)
    if plan.action == UNSIGNABLE and unsignable_policy() == REFUSE:
        return plan.reason
    return None


def dkim_warning(domain: Domain | None) -> str | None:
    """The warning for a verified domain whose mail goes out unsigned (waiver, no key, the send-unsigned
    policy), for the pre-flight and the domain page; None when it signs or its mail is refused."""
    if domain is None or domain.status != DomainStatus.VERIFIED:
        return None
    plan = domain_plan(domain)
    if plan.action == UNSIGNABLE and unsignable_policy() == SEND_UNSIGNED:
        return f"Mail from {domain.domain} is sent without a DKIM signature: {plan.reason}"
    if plan.action != UNSIGNED:
        return None
    if domain.dkim_waived_at is not None:
        return (
            f"{domain.domain} was verified without DKIM: its mail is sent unsigned and receivers may reject "
            "it. Publish the DKIM record shown in Settings > Domains and press Check now."
        )
    return (
        f"{domain.domain} has no DKIM key: its mail is sent unsigned. Press Check now in Settings > Domains "
        "to generate one, then publish its record."
    )


def header_names(message: bytes) -> set[bytes]:
    """The lower-cased field names of the message's header (up to the first empty line)."""
    head = message.split(b"\r\n\r\n", 1)[0]
    names = set()
    for line in head.split(b"\r\n"):
        if line[:1] not in (b" ", b"\t"):
            name, sep, _ = line.partition(b":")
            if sep:
                names.add(name.strip().lower())
    return names


def include_headers(message: bytes) -> list[bytes]:
    """The `h=` list for `message`: every `SIGNED_HEADERS` field it has, then the `OVERSIGNED` ones again."""
    present = header_names(message)
    signed = [name for name in SIGNED_HEADERS if name in present]
    return signed + [name for name in OVERSIGNED if name in present]


def dkim_sign(message: bytes, *, organization_id: Any, from_email: str) -> bytes:
    """`message` with a `DKIM-Signature` header prepended; unchanged when the plan is `unsigned`. Raises
    `SigningUnavailable` when the domain should sign and cannot (policy `refuse`)."""
    plan = signing_plan(organization_id, from_email)
    if plan.action == SIGN:
        try:
            header = dkim.sign(
                message,
                plan.selector,
                plan.domain,
                plan.pem,
                canonicalize=CANONICALIZE,
                include_headers=include_headers(message),
            )
        except dkim.DKIMException as exc:
            logger.exception("DKIM signing failed for %s", plan.domain.decode())
            plan = SigningPlan(UNSIGNABLE, reason=f"DKIM signing failed for {plan.domain.decode()}: {exc}")
        else:
            return header + message
    if plan.action == UNSIGNABLE:
        if unsignable_policy() == REFUSE:
            raise SigningUnavailable(plan.reason)
        logger.warning("sending unsigned (DKIM_UNSIGNABLE=send_unsigned): %s", plan.reason)
    return message
