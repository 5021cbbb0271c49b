"""What the operator of a sending domain must publish (DOM-12 `dns_records`): pure functions of the domain, its
verification token, its live DKIM keys and the installation's settings."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

OWNERSHIP_PREFIX = "_owlat"
OWNERSHIP_VALUE_PREFIX = "owlat-verification="

#: Record keys in display order; DKIM records are keyed `dkim:<selector>`.
KINDS = ("ownership", "spf", "dkim", "dmarc", "return_path")


def _site_host() -> str:
    return urlsplit(settings.SITE_URL).hostname or "localhost"


def ip_version(host: str) -> int | None:
    """4 or 6 when `host` is an IP address literal, else None."""
    try:
        return ipaddress.ip_address(host.strip("[]")).version
    except ValueError:
        return None


def spf_mechanism() -> str:
    """The SPF mechanism that authorizes this installation: `DOMAIN_SPF_MECHANISM`, else for the host of
    `SITE_URL` `a:<host>` — or `ip4:`/`ip6:<address>` when the host is an IP (an IP in `a:` is invalid SPF)."""
    if settings.DOMAIN_SPF_MECHANISM:
        return settings.DOMAIN_SPF_MECHANISM.strip()
    host = _site_host()
    version = ip_version(host)
    return f"ip{version}:{host.strip('[]')}" if version else f"a:{host}"


def bounce_target() -> str:
    """What the return-path domain is a CNAME of: `BOUNCE_DOMAIN` (whose MX is the bounce intake), else the host of
    `SITE_URL`."""
    return (getattr(settings, "BOUNCE_DOMAIN", "") or _site_host()).strip().rstrip(".").lower()


def return_path_domain(domain: str) -> str:
    """The return-path (envelope sender / bounce) domain of a sending domain."""
    return f"{settings.RETURN_PATH_SUBDOMAIN}.{domain}".lower()


def dkim_record_name(selector: str, domain: str) -> str:
    return f"{selector}._domainkey.{domain}".lower()


def dkim_record_value(public_key_b64: str) -> str:
    return f"v=DKIM1; k=rsa; p={public_key_b64}"


def expected_records(domain: str, token: str, dkim_keys: Iterable[Any]) -> list[dict[str, str]]:
    """Every record to publish, each `{key, kind, type, name, value, purpose}`. `dkim_keys`: the live (not retired)
    keys, each with `selector` and `public_key`; during a rotation both selectors are listed."""
    domain = domain.lower()
    records = [
        {
            "key": "ownership",
            "kind": "ownership",
            "type": "TXT",
            "name": f"{OWNERSHIP_PREFIX}.{domain}",
            "value": f"{OWNERSHIP_VALUE_PREFIX}{token}",
            "purpose": "Proves that your organization controls the domain.",
        },
        {
            "key": "spf",
            "kind": "spf",
            "type": "TXT",
            "name": domain,
            "value": f"v=spf1 {spf_mechanism()} ~all",
            "purpose": "SPF: authorizes this installation to send for the domain. If the domain already has an "
            f"SPF record, add {spf_mechanism()} to it instead of publishing a second one.",
        },
    ]
    for key in dkim_keys:
        records.append(
            {
                "key": f"dkim:{key.selector}",
                "kind": "dkim",
                "type": "TXT",
                "name": dkim_record_name(key.selector, domain),
                "value": dkim_record_value(key.public_key),
                "purpose": f"DKIM public key of selector {key.selector}: receivers verify the signature with it.",
            }
        )
    records += [
        {
            "key": "dmarc",
            "kind": "dmarc",
            "type": "TXT",
            "name": f"_dmarc.{domain}",
            "value": "v=DMARC1; p=none",
            "purpose": "DMARC policy (any policy is accepted; p=none is the safe start).",
        },
        return_path_record(domain),
    ]
    return records


def return_path_record(domain: str) -> dict[str, str]:
    """A CNAME of the bounce host; when that host is an IP address (a CNAME cannot point at one), an A or AAAA
    record with the address — mail to the return-path domain then reaches it (implicit MX, RFC 5321 5.1)."""
    target = bounce_target()
    version = ip_version(target)
    record = {
        "key": "return_path",
        "kind": "return_path",
        "type": "CNAME",
        "name": return_path_domain(domain),
        "value": target,
        "purpose": "Return-path domain: bounces addressed to it reach this installation's bounce intake.",
    }
    if version:
        record["type"] = "A" if version == 4 else "AAAA"
        record["value"] = target.strip("[]")
        record["purpose"] += (
            " The bounce host is an IP address, so this is an address record (a CNAME cannot point at an IP); "
            "with a host name in BOUNCE_DOMAIN it becomes a CNAME."
        )
    return record


_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def valid_domain_name(name: str) -> bool:
    """A host name of at least two labels (letters, digits, hyphens; IDNs in their xn-- form)."""
    labels = name.split(".")
    return len(name) <= 253 and len(labels) >= 2 and all(_LABEL.match(label) for label in labels)
