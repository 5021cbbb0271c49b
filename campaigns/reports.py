"""A campaign's report, read from its send rows: each rate with its denominator said, clicks per link, first
opens and first clicks over time, bounces and complaints by classified reason, and the per-recipient outcomes
as CSV rows streamed in constant memory.

Everything here is a read (a selector); the only writes of a follow-up live in `campaigns.followups`. Every read
filters by the campaign's organization as well as its id, so a caller that scoped the campaign to the
operator's organization cannot be led into another tenant's rows.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet
from django.db.models.functions import TruncDay, TruncHour

from campaigns.models import Campaign

#: above this span the chart counts per day instead of per hour
HOURLY_SPAN = dt.timedelta(hours=72)
#: the most buckets the chart draws (the newest are dropped beyond it, and the chart says so)
MAX_BUCKETS = 120
CSV_COLUMNS = (
    "email",
    "first_name",
    "last_name",
    "status",
    "variant",
    "language",
    "queued_at",
    "sent_at",
    "delivered_at",
    "opened_at",
    "open_count",
    "clicked_at",
    "clicks",
    "bounced_at",
    "bounce_type",
    "complained_at",
    "unsubscribed_at",
    "failed_at",
    "error_code",
    "outcome_unknown",
)
_CSV_FIELDS = (
    "contact_email",
    "contact_first_name",
    "contact_last_name",
    "status",
    "ab_variant",
    "language",
    "queued_at",
    "sent_at",
    "delivered_at",
    "opened_at",
    "open_count",
    "clicked_at",
    "clicked_links",
    "bounced_at",
    "bounce_type",
    "complained_at",
    "unsubscribed_at",
    "failed_at",
    "error_code",
    "outcome_unknown",
)


def campaign_rows(campaign: Campaign) -> QuerySet:
    """The campaign's live send rows, scoped to its organization."""
    from delivery.models import EmailSend

    return EmailSend.objects.filter(
        organization_id=campaign.organization_id, campaign_id=campaign.pk, deleted_at__isnull=True
    )


# -- rates ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rate:
    """`part` of `whole` `what`, e.g. "312 of 1,040 delivered (30.0 %)"."""

    part: int
    whole: int
    what: str

    @property
    def percent(self) -> float | None:
        return self.part / self.whole * 100 if self.whole else None

    def __str__(self) -> str:
        share = f" ({self.percent:.2f} %)" if self.percent is not None else ""
        return f"{self.part:,} of {self.whole:,} {self.what}{share}"


def engagement_basis(stats: dict[str, Any]) -> tuple[int, str]:
    """The denominator of click rates: the delivered rows when the provider reports deliveries, else the sent
    rows (the `local` provider and plain SMTP never report a delivery, and a rate over zero deliveries would
    read 100 % for one click)."""
    if stats.get("delivered"):
        return stats["delivered"], "delivered"
    return stats.get("sent", 0), "sent (the provider reports no deliveries)"


def report_rates(stats: dict[str, Any]) -> list[tuple[str, int, Rate | None]]:
    """The report table: (label, count, rate or None) for `delivery.services.campaign_send_stats` figures."""
    from delivery.services import open_rate_basis

    sent = stats.get("sent", 0)
    whole, what = engagement_basis(stats)
    basis = open_rate_basis(stats)
    if basis is not None and basis[2] == "delivered" and not stats.get("delivered"):
        basis = (stats["opened"], whole, what)
    opened = Rate(*basis) if basis is not None else None
    return [
        ("Sent", sent, None),
        ("Delivered", stats.get("delivered", 0), Rate(stats.get("delivered", 0), sent, "sent")),
        ("Opened", stats.get("opened", 0), opened),
        ("Clicked", stats.get("clicked", 0), Rate(stats.get("clicked", 0), whole, what)),
        ("Bounced", stats.get("bounced", 0), Rate(stats.get("bounced", 0), sent, "sent")),
        ("Complained", stats.get("complained", 0), Rate(stats.get("complained", 0), sent, "sent")),
        ("Unsubscribed", stats.get("unsubscribed", 0), Rate(stats.get("unsubscribed", 0), sent, "sent")),
        ("Failed", stats.get("failed", 0), None),
        ("Outcome unknown", stats.get("outcome_unknown", 0), None),
    ]


# -- clicks per link ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkClicks:
    url: str
    unique: int  # recipients who clicked it at least once
    total: int  # every recorded click


def _click_urls(clicked_links: Any) -> list[str]:
    urls = []
    for click in clicked_links or []:
        url = click.get("url") if isinstance(click, dict) else click
        if isinstance(url, str) and url:
            urls.append(url)
    return urls


def link_clicks(campaign: Campaign) -> list[LinkClicks]:
    """Clicks per link, most unique clickers first. Reads only the rows with a recorded click, streamed; the
    counting is in Python because the click log is a JSON list (one code path on PostgreSQL and SQLite)."""
    unique: dict[str, int] = {}
    total: dict[str, int] = {}
    rows = campaign_rows(campaign).exclude(clicked_links=[]).values_list("clicked_links", flat=True)
    for clicked_links in rows.iterator(chunk_size=2000):
        urls = _click_urls(clicked_links)
        for url in urls:
            total[url] = total.get(url, 0) + 1
        for url in set(urls):
            unique[url] = unique.get(url, 0) + 1
    ranked = sorted(unique, key=lambda u: (-unique[u], -total[u], u))
    return [LinkClicks(u, unique[u], total[u]) for u in ranked]


def link_urls(campaign: Campaign) -> list[str]:
    """The links of the campaign anyone clicked, for the "clicked link L" picker."""
    return [link.url for link in link_clicks(campaign)]


# -- over time ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ActivitySeries:
    unit: str  # "hour" | "day"
    buckets: list[tuple[dt.datetime, dict[str, int]]]  # (start, {"sent", "opened", "clicked"})
    truncated: bool


def activity_series(campaign: Campaign) -> ActivitySeries:
    """Sends, first opens and first clicks per hour (per day when they span more than `HOURLY_SPAN`)."""
    rows = campaign_rows(campaign)
    first = rows.filter(sent_at__isnull=False).order_by("sent_at").values_list("sent_at", flat=True).first()
    last = None
    for field in ("sent_at", "opened_at", "clicked_at"):
        latest = (
            rows.filter(**{f"{field}__isnull": False}).order_by(f"-{field}").values_list(field, flat=True)
        )
        at = latest.first()
        last = at if last is None or (at is not None and at > last) else last
    unit = "day" if first and last and last - first > HOURLY_SPAN else "hour"
    trunc = TruncDay if unit == "day" else TruncHour
    counts: dict[dt.datetime, dict[str, int]] = {}
    for field, name in (("sent_at", "sent"), ("opened_at", "opened"), ("clicked_at", "clicked")):
        grouped = (
            rows.filter(**{f"{field}__isnull": False})
            .annotate(bucket=trunc(field))
            .values("bucket")
            .annotate(n=Count("pk"))
            .order_by("bucket")
        )
        for row in grouped[: MAX_BUCKETS + 1]:
            counts.setdefault(row["bucket"], {"sent": 0, "opened": 0, "clicked": 0})[name] = row["n"]
    ordered = sorted(counts.items())
    return ActivitySeries(unit, ordered[:MAX_BUCKETS], len(ordered) > MAX_BUCKETS)


# -- bounces and complaints --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BounceLine:
    kind: str  # hard | soft | block | complaint | …
    reason: str  # the classified reason's label
    count: int


def bounce_breakdown(campaign: Campaign) -> list[BounceLine]:
    """Received bounces and complaints of the campaign's rows by kind and classified reason, most first; rows
    marked bounced or complained without a received report (a provider webhook) count as "not classified"."""
    from delivery.bounces.reasons import REASON_LABELS
    from delivery.models import BounceRecord

    rows = campaign_rows(campaign)
    records = BounceRecord.objects.filter(
        organization_id=campaign.organization_id, send_kind="campaign", send_id__in=rows.values("pk")
    )
    lines = [
        BounceLine(r["kind"], REASON_LABELS.get(r["reason"], r["reason"]), r["n"])
        for r in records.values("kind", "reason").annotate(n=Count("pk")).order_by("-n", "kind", "reason")
    ]
    reported = records.values("send_id")
    for kind in ("hard", "soft"):
        n = rows.filter(bounced_at__isnull=False, bounce_type=kind).exclude(pk__in=reported).count()
        if n:
            lines.append(BounceLine(kind, "not classified (reported by the provider)", n))
    n = rows.filter(complained_at__isnull=False).exclude(pk__in=reported).count()
    if n:
        lines.append(BounceLine("complaint", "not classified (reported by the provider)", n))
    return lines


# -- CSV export --------------------------------------------------------------------------------------------------
class _Echo:
    def write(self, value: str) -> str:
        return value


def _cell(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value  # a spreadsheet must not run a recipient's name as a formula
    return value


def outcome_csv_lines(campaign: Campaign, *, chunk_size: int = 2000) -> Iterator[str]:
    """The per-recipient outcomes as CSV lines (header first), read with a server-side cursor in pk order:
    memory stays constant however many rows the campaign has."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    rows = campaign_rows(campaign).order_by("pk").values_list(*_CSV_FIELDS)
    links_at = _CSV_FIELDS.index("clicked_links")
    for row in rows.iterator(chunk_size=chunk_size):
        cells = list(row)
        cells[links_at] = len(_click_urls(cells[links_at]))
        yield writer.writerow([_cell(c) for c in cells])


# -- the condition builder's pickers -----------------------------------------------------------------------------
_HREF = re.compile(r"""href\s*=\s*["'](https?://[^"'{}\s]+)["']""", re.IGNORECASE)
PICKER_CAMPAIGNS = 50


def campaign_links(campaign: Campaign) -> list[str]:
    """The links of the campaign's frozen content (every variant and language), in order of appearance."""
    from campaigns.models import CampaignContentSnapshot

    seen: dict[str, None] = {}
    for html in CampaignContentSnapshot.objects.filter(
        organization_id=campaign.organization_id, campaign=campaign
    ).values_list("html", flat=True):
        for url in _HREF.findall(html or ""):
            seen.setdefault(url, None)
    return list(seen)


def campaign_picker(organization_id: Any) -> list[tuple[str, str, list[str]]]:
    """The campaigns that have started sending (newest first) with their links, for the condition builder."""
    campaigns = Campaign.objects.filter(organization_id=organization_id, sent_at__isnull=False).order_by(
        "-sent_at"
    )[:PICKER_CAMPAIGNS]
    return [(str(c.pk), f"{c.name} (sent {c.sent_at:%Y-%m-%d})", campaign_links(c)) for c in campaigns]
