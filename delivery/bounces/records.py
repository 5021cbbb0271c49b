"""The received-bounce records (`BounceRecord`), their one writer, and the reads built on them: the soft-bounce
window and the deliverability alert.

Suppression policy, by the report's kind (`delivery.bounces.reasons`):
- `hard` (user unknown, host unknown, mailbox disabled): suppressed at once, by the send lifecycle;
- `soft` (mailbox full, expired, unexplained): suppressed once the address has soft-bounced on
  `BOUNCE_SOFT_THRESHOLD` different sends within `BOUNCE_SOFT_WINDOW_DAYS` (a delivery in between starts the
  count again);
- `block` (blocked, policy, spam/content, too big, rate limited): never suppressed; when an organization sees
  `DELIVERABILITY_ALERT_THRESHOLD` blocks from one receiving domain within `DELIVERABILITY_ALERT_WINDOW_MINUTES`,
  the dashboard shows an alert with the latest diagnostic;
- `delayed`, `auto_reply`: recorded, never counted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from delivery.models import BounceRecord

PROVIDER_DOMAINS = {
    "Google": ("gmail.com", "googlemail.com"),
    "Microsoft": (
        "outlook.com",
        "hotmail.com",
        "live.com",
        "msn.com",
        "hotmail.co.uk",
        "hotmail.fr",
        "live.de",
    ),
    "Yahoo": ("yahoo.com", "ymail.com", "aol.com", "yahoo.co.uk", "yahoo.fr", "yahoo.de", "rocketmail.com"),
    "Apple": ("icloud.com", "me.com", "mac.com"),
    "GMX / web.de": ("gmx.net", "gmx.de", "gmx.com", "web.de"),
    "Comcast": ("comcast.net",),
    "Yandex": ("yandex.ru", "yandex.com"),
    "Mail.ru": ("mail.ru", "bk.ru", "inbox.ru", "list.ru"),
}
PROVIDER_HOSTS = {
    "Microsoft": ("outlook.com", "protection.outlook.com", "hotmail.com"),
    "Google": ("google.com", "googlemail.com"),
    "Yahoo": ("yahoo.com", "yahoodns.net", "aol.com"),
    "Proofpoint": ("pphosted.com",),
    "Mimecast": ("mimecast.com",),
    "Barracuda": ("barracudanetworks.com",),
    "Amazon SES": ("amazonses.com",),
    "Apple": ("me.com", "icloud.com"),
}
_BY_DOMAIN = {d: p for p, domains in PROVIDER_DOMAINS.items() for d in domains}


def provider_of(recipient_domain: str, mta: str | None = None) -> str:
    """The receiving provider: from the recipient's domain, else from the reporting/remote MTA's host name."""
    domain = (recipient_domain or "").lower()
    if domain in _BY_DOMAIN:
        return _BY_DOMAIN[domain]
    host = (mta or "").lower().rstrip(".")
    for provider, suffixes in PROVIDER_HOSTS.items():
        if any(host == s or host.endswith("." + s) for s in suffixes):
            return provider
    return ""


def bounce_record(
    *,
    organization_id: Any,
    send_kind: str,
    send_id: Any,
    contact_id: Any,
    email: str,
    kind: str,
    reason: str,
    status: str | None,
    diagnostic: str | None,
    reporting_mta: str | None = None,
    suppressed: bool = False,
) -> BounceRecord:
    """Write one received report about a send row (the only writer of `BounceRecord`)."""
    domain = (email or "").rpartition("@")[2].lower()[:253]
    return BounceRecord.objects.create(
        organization_id=organization_id,
        send_kind=send_kind,
        send_id=send_id,
        contact_id=contact_id,
        email=(email or "").lower()[:254],
        recipient_domain=domain,
        provider=provider_of(domain, reporting_mta),
        kind=kind[:12],
        reason=reason[:20],
        status=(status or "")[:12],
        diagnostic=(diagnostic or "")[:2000],
        reporting_mta=(reporting_mta or "")[:253],
        suppressed=suppressed,
    )


def soft_window() -> dt.timedelta:
    return dt.timedelta(days=settings.BOUNCE_SOFT_WINDOW_DAYS)


def soft_bounces_in_window(*, contact_id: Any, now: dt.datetime | None = None) -> int:
    """Sends to the contact that soft-bounced within the window, blocks excluded (they say nothing about the
    address)."""
    from delivery.models import EmailSend, TransactionalSend

    since = (now or timezone.now()) - soft_window()
    blocked = BounceRecord.objects.filter(contact_id=contact_id, kind="block").values("send_id")
    total = 0
    for model in (EmailSend, TransactionalSend):
        total += (
            model.objects.filter(
                contact_id=contact_id, status="bounced", bounce_type="soft", bounced_at__gte=since
            )
            .exclude(pk__in=blocked)
            .count()
        )
    return total


@dataclass(frozen=True)
class DeliverabilityAlert:
    recipient_domain: str
    provider: str
    blocks: int
    window_minutes: int
    last_diagnostic: str
    last_reason: str

    @property
    def message(self) -> str:
        where = self.recipient_domain + (f" ({self.provider})" if self.provider else "")
        return (
            f"{self.blocks} blocks from {where} in the last {self.window_minutes} minutes: the sending IP or "
            "domain may be listed. The addresses are not suppressed."
        )


def deliverability_alerts(
    *, organization_id: Any, now: dt.datetime | None = None
) -> list[DeliverabilityAlert]:
    """Receiving domains that refused this organization's mail at least `DELIVERABILITY_ALERT_THRESHOLD` times
    within `DELIVERABILITY_ALERT_WINDOW_MINUTES`, most blocks first."""
    minutes = int(settings.DELIVERABILITY_ALERT_WINDOW_MINUTES)
    since = (now or timezone.now()) - dt.timedelta(minutes=minutes)
    scope = BounceRecord.objects.filter(kind="block", received_at__gte=since)
    if organization_id is not None:  # None: every organization (platform staff)
        scope = scope.filter(organization_id=organization_id)
    rows = (
        scope.values("recipient_domain", "provider")
        .annotate(blocks=Count("id"), last=Max("received_at"))
        .filter(blocks__gte=int(settings.DELIVERABILITY_ALERT_THRESHOLD))
        .order_by("-blocks", "recipient_domain")[:10]
    )
    alerts = []
    for row in rows:
        latest = (
            scope.filter(recipient_domain=row["recipient_domain"])
            .order_by("-received_at")
            .values("diagnostic", "reason")
            .first()
            or {}
        )
        alerts.append(
            DeliverabilityAlert(
                recipient_domain=row["recipient_domain"],
                provider=row["provider"],
                blocks=row["blocks"],
                window_minutes=minutes,
                last_diagnostic=latest.get("diagnostic", ""),
                last_reason=latest.get("reason", ""),
            )
        )
    return alerts
