"""The admin home: a dashboard (django-unfold `DASHBOARD_CALLBACK`) for the active organization (all of them for
platform staff in "all organizations" mode).

What it shows, and where each figure comes from — counters the engines keep, never a scan of send rows:

* KPI cards — sends today; delivery, open, click, bounce and complaint rates over 7 and 30 days: the DLV-11 daily
  counters (`SendingStat`, one row per organization, day and sender domain: at most 31 × domains rows read).
  Live contacts and their growth: the contacts table (an indexed count and the new contacts per day).
* Charts — sends per day by outcome (the same counters), contact growth (cumulative live contacts per day),
  and funnels registered by the engines (automations: entered → per-step completed, from the step counters).
* "Needs attention" — failed sends and high bounce/complaint rates (counters), a stale worker heartbeat, failed
  background tasks (platform staff), and whatever the engines register.

The kernel imports no app (the layering rule), so the engines contribute through two registries, filled in their
`AppConfig.ready()`:

    from owlat.admin.dashboard import AttentionItem, Funnel, register_attention_source, register_funnel_source

    def held_campaigns(organization_id):                      # None = every organization (platform staff)
        qs = Campaign.objects.filter(status="pending_review")
        if organization_id is not None:
            qs = qs.filter(organization_id=organization_id)
        n = qs.count()
        if n:
            yield AttentionItem(f"{n} campaign(s) held for review", link=reverse("admin:campaigns_campaign_changelist")
                                + "?status__exact=pending_review", severity="warning")

    register_attention_source(held_campaigns)                 # e.g. campaigns: held campaigns
    register_attention_source(quarantined_messages)           # e.g. inbox: quarantined messages
    register_funnel_source(automation_funnels)                # automations: returns a list of `Funnel`

A source takes the organization id (None for all organizations), runs a bounded number of queries on counters or
indexed filters, and returns items; an exception in a source is logged and shown as an item, never a 500.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from owlat.admin_tenancy import get_tenancy
from owlat.models import Contact, SendingStat, WorkerHeartbeat

logger = logging.getLogger(__name__)

HEARTBEAT_STALE_SECONDS = 120
BOUNCE_RATE_WARNING = 0.05  # 5 % of sent over 7 days
COMPLAINT_RATE_WARNING = 0.001  # 0.1 % of sent over 7 days
COUNTERS = ("sent", "delivered", "opened", "clicked", "bounced", "complained", "failed")


# --- registries -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionItem:
    """One line of "Needs attention". `severity`: "danger", "warning" or "info"."""

    title: str
    link: str | None = None
    severity: str = "warning"
    detail: str = ""
    #: an optional button: POSTed (with the CSRF token) to `action_url`
    action_url: str | None = None
    action_label: str = ""


@dataclass(frozen=True)
class Funnel:
    """A funnel chart: `steps` are (label, count) from first to last stage."""

    name: str
    steps: list[tuple[str, int]] = field(default_factory=list)
    link: str | None = None


AttentionSource = Callable[[Any], Iterable[AttentionItem]]
FunnelSource = Callable[[Any], Iterable[Funnel]]
_ATTENTION_SOURCES: list[AttentionSource] = []
_FUNNEL_SOURCES: list[FunnelSource] = []


def register_attention_source(source: AttentionSource) -> None:
    """Add a "Needs attention" source: `source(organization_id | None) -> Iterable[AttentionItem]`."""
    if source not in _ATTENTION_SOURCES:
        _ATTENTION_SOURCES.append(source)


def register_funnel_source(source: FunnelSource) -> None:
    """Add a funnel source: `source(organization_id | None) -> Iterable[Funnel]` (a few, e.g. the top 5)."""
    if source not in _FUNNEL_SOURCES:
        _FUNNEL_SOURCES.append(source)


# --- figures ----------------------------------------------------------------------------------------------


def _scoped(qs: Any, organization_id: Any) -> Any:
    return qs if organization_id is None else qs.filter(organization_id=organization_id)


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _pct(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.1f} %" if value >= 0.001 or value == 0 else f"{value * 100:.2f} %"


def _link(name: str, query: str = "") -> str | None:
    try:
        url = reverse(name)
    except NoReverseMatch:
        return None
    return f"{url}?{query}" if query else url


def sending_figures(organization_id: Any, today: dt.date) -> dict[str, Any]:
    """Daily counters of the last 30 days (one query): totals for today, 7 and 30 days, and the series."""
    start = today - dt.timedelta(days=29)
    rows = (
        _scoped(SendingStat.objects.filter(day__gte=start, day__lte=today), organization_id)
        .values("day")
        .annotate(**{name: Sum(name) for name in COUNTERS})
        .order_by("day")
    )
    by_day = {row["day"]: row for row in rows}
    days = [start + dt.timedelta(days=i) for i in range(30)]
    series = [{name: (by_day.get(day) or {}).get(name) or 0 for name in COUNTERS} for day in days]

    def total(last: int) -> dict[str, int]:
        return {name: sum(s[name] for s in series[-last:]) for name in COUNTERS}

    return {"days": days, "series": series, "today": total(1), "d7": total(7), "d30": total(30)}


def rates(totals: dict[str, int]) -> dict[str, float | None]:
    """Delivery, bounce and complaint rates of sent mail; open and click rates of delivered mail."""
    sent, delivered = totals["sent"], totals["delivered"]
    return {
        "delivery": _rate(delivered, sent),
        "open": _rate(totals["opened"], delivered),
        "click": _rate(totals["clicked"], delivered),
        "bounce": _rate(totals["bounced"], sent),
        "complaint": _rate(totals["complained"], sent),
    }


def contact_figures(organization_id: Any, today: dt.date) -> dict[str, Any]:
    """Live contacts, new ones in 7 and 30 days, and the cumulative curve of the last 30 days (two queries)."""
    live = _scoped(Contact.objects.filter(deleted_at__isnull=True), organization_id)
    total = live.count()
    start = today - dt.timedelta(days=29)
    since = timezone.make_aware(dt.datetime.combine(start, dt.time.min), dt.UTC)
    per_day = dict(
        live.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
        .values("day")
        .annotate(n=Count("pk"))
        .values_list("day", "n")
    )
    days = [start + dt.timedelta(days=i) for i in range(30)]
    new = [per_day.get(day, 0) for day in days]
    new30, new7 = sum(new), sum(new[-7:])
    running, curve = total - new30, []
    for n in new:
        running += n
        curve.append(running)
    before = total - new30
    return {
        "total": total,
        "new7": new7,
        "new30": new30,
        "growth30": _rate(new30, before) if before else None,
        "days": days,
        "curve": curve,
    }


def kernel_attention(
    organization_id: Any, sending: dict[str, Any], *, platform_staff: bool
) -> list[AttentionItem]:
    items: list[AttentionItem] = []
    d7 = sending["d7"]
    if d7["failed"]:
        items.append(
            AttentionItem(
                f"{d7['failed']} send(s) failed in the last 7 days",
                link=_link("admin:delivery_transactionalsend_changelist", "status__exact=failed"),
                severity="danger",
                detail="Open the list to see each send's error; campaign sends are under Campaigns.",
            )
        )
    r7 = rates(d7)
    if r7["bounce"] is not None and r7["bounce"] >= BOUNCE_RATE_WARNING:
        items.append(
            AttentionItem(
                f"Bounce rate {_pct(r7['bounce'])} over 7 days",
                link=_link("admin:owlat_sendingstat_changelist"),
                severity="warning",
                detail="At or above 5 %: clean the list or check the sending domain.",
            )
        )
    if r7["complaint"] is not None and r7["complaint"] >= COMPLAINT_RATE_WARNING:
        items.append(
            AttentionItem(
                f"Complaint rate {_pct(r7['complaint'])} over 7 days",
                link=_link("admin:owlat_sendingstat_changelist"),
                severity="danger",
                detail="At or above 0.1 %: mailbox providers may start filtering your mail.",
            )
        )
    newest = WorkerHeartbeat.objects.order_by("-beat_at").values_list("beat_at", flat=True).first()
    if newest is None or (timezone.now() - newest).total_seconds() > HEARTBEAT_STALE_SECONDS:
        when = "never" if newest is None else f"last at {timezone.localtime(newest):%Y-%m-%d %H:%M:%S}"
        items.append(
            AttentionItem(
                f"Background workers are not beating ({when})",
                link=_link("admin:owlat_workerheartbeat_changelist") if platform_staff else None,
                severity="danger",
                detail="Sends, automations and webhooks wait until the workers and the dispatcher run.",
            )
        )
    if platform_staff:
        from django_q.models import Failure

        day_ago = timezone.now() - dt.timedelta(days=1)
        failed = Failure.objects.filter(stopped__gte=day_ago).count()
        if failed:
            items.append(
                AttentionItem(
                    f"{failed} background task(s) failed in the last 24 hours",
                    link=_link("admin:django_q_failure_changelist"),
                    severity="warning",
                )
            )
    return items


def _from_sources(
    sources: list[Callable[[Any], Iterable[Any]]], organization_id: Any
) -> tuple[list[Any], list[str]]:
    results: list[Any] = []
    errors: list[str] = []
    for source in sources:
        try:
            results.extend(source(organization_id))
        except Exception:
            logger.exception("dashboard source %r failed", source)
            errors.append(getattr(source, "__name__", repr(source)))
    return results, errors


# --- charts -----------------------------------------------------------------------------------------------

_OUTCOME_COLORS = {
    "delivered": "var(--color-primary-600)",
    "opened": "var(--color-primary-300)",
    "bounced": "#f59e0b",
    "complained": "#ef4444",
    "failed": "#7f1d1d",
}


def sends_chart(sending: dict[str, Any]) -> str:
    labels = [f"{d:%d %b}" for d in sending["days"]]
    datasets = []
    for name in ("delivered", "bounced", "complained", "failed"):
        datasets.append(
            {
                "label": name.capitalize(),
                "data": [s[name] for s in sending["series"]],
                "backgroundColor": _OUTCOME_COLORS[name],
                "stack": "outcome",
            }
        )
    pending = [max(0, s["sent"] - s["delivered"] - s["bounced"] - s["failed"]) for s in sending["series"]]
    datasets.append(
        {"label": "Sent, no outcome yet", "data": pending, "backgroundColor": "#cbd5e1", "stack": "outcome"}
    )
    return json.dumps({"labels": labels, "datasets": datasets})


def growth_chart(contacts: dict[str, Any]) -> str:
    return json.dumps(
        {
            "labels": [f"{d:%d %b}" for d in contacts["days"]],
            "datasets": [
                {
                    "label": "Live contacts",
                    "data": contacts["curve"],
                    "borderColor": "var(--color-primary-600)",
                    "backgroundColor": "var(--color-primary-600)",
                }
            ],
        }
    )


def chart_options(*, stacked: bool, legend: bool) -> str:
    axis = {"stacked": stacked, "grid": {"display": False}}
    return json.dumps(
        {
            "maintainAspectRatio": False,
            "plugins": {"legend": {"display": legend, "position": "bottom", "align": "start"}},
            "scales": {
                "x": {**axis, "ticks": {"maxTicksLimit": 8, "maxRotation": 0}},
                "y": {**axis, "beginAtZero": True, "ticks": {"precision": 0}},
            },
        }
    )


def funnel_rows(funnel: Funnel) -> list[dict[str, Any]]:
    first = funnel.steps[0][1] if funnel.steps else 0
    return [
        {"label": label, "count": count, "share": round(100 * count / first) if first else 0}
        for label, count in funnel.steps
    ]


# --- the callback -----------------------------------------------------------------------------------------


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    tenancy = get_tenancy(request)
    if tenancy.organization is None and not tenancy.sees_everything:
        return {}
    organization_id = tenancy.organization_id  # None: every organization (platform staff)
    today = timezone.now().date()
    sending = sending_figures(organization_id, today)
    contacts = contact_figures(organization_id, today)
    r7, r30 = rates(sending["d7"]), rates(sending["d30"])
    kpis = [
        {
            "title": "Sends today",
            "value": f"{sending['today']['sent']:,}",
            "detail": f"{sending['d7']['sent']:,} in 7 days · {sending['d30']['sent']:,} in 30 days",
        },
    ]
    for key, title in (
        ("delivery", "Delivery rate"),
        ("open", "Open rate"),
        ("click", "Click rate"),
        ("bounce", "Bounce rate"),
        ("complaint", "Complaint rate"),
    ):
        kpis.append({"title": title, "value": _pct(r7[key]), "detail": f"7 days · 30 days: {_pct(r30[key])}"})
    growth = contacts["growth30"]
    kpis.append(
        {
            "title": "Contacts",
            "value": f"{contacts['total']:,}",
            "detail": f"+{contacts['new7']:,} in 7 days · +{contacts['new30']:,} in 30 days"
            + (f" ({_pct(growth)})" if growth is not None else ""),
        }
    )
    attention = kernel_attention(organization_id, sending, platform_staff=tenancy.is_platform_staff)
    extra, failed_sources = _from_sources(_ATTENTION_SOURCES, organization_id)
    attention += extra
    attention += [
        AttentionItem(f"Dashboard source “{name}” failed (see the log)", severity="info")
        for name in failed_sources
    ]
    funnels, _ = _from_sources(_FUNNEL_SOURCES, organization_id)
    return {
        "scope": tenancy.organization.name if tenancy.organization else "All organizations",
        "kpis": kpis,
        "attention": sorted(attention, key=lambda i: {"danger": 0, "warning": 1}.get(i.severity, 2)),
        "sends_chart": sends_chart(sending),
        "sends_chart_options": chart_options(stacked=True, legend=True),
        "growth_chart": growth_chart(contacts),
        "growth_chart_options": chart_options(stacked=False, legend=False),
        "funnels": [{"name": f.name, "link": f.link, "rows": funnel_rows(f)} for f in funnels],
        "links": {
            "sends": _link("admin:owlat_sendingstat_changelist"),
            "contacts": _link("admin:owlat_contact_changelist"),
            "automations": _link("admin:automations_automation_changelist"),
        },
    }


def dashboard_callback(request: HttpRequest, context: dict[str, Any]) -> dict[str, Any]:
    """`UNFOLD["DASHBOARD_CALLBACK"]`: adds `dashboard` to the admin index's context."""
    context["dashboard"] = dashboard_context(request)
    context["title"] = "Dashboard"
    return context
