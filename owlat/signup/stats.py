"""What an operator sees of a form: submissions, confirmations and conversion per day, refusals by reason."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Sum
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from owlat.models import SignupForm, SignupFormDay

REFUSALS = ("honeypot", "too_fast", "rate_limit", "origin", "invalid")


@dataclass(frozen=True)
class DayRow:
    day: dt.date
    submissions: int
    confirmations: int


def conversion(submissions: int, confirmations: int) -> str:
    return f"{100 * confirmations / submissions:.0f}%" if submissions else "–"


def form_totals(form: SignupForm, *, days: int = 30) -> dict[str, int]:
    since = timezone.now().date() - dt.timedelta(days=days - 1)
    fields = ("submissions", "accepted", "confirmations", *(f"refused_{r}" for r in REFUSALS))
    sums = SignupFormDay.objects.filter(form=form, day__gte=since).aggregate(**{f: Sum(f) for f in fields})
    return {f: int(v or 0) for f, v in sums.items()}


def form_days(form: SignupForm, *, days: int = 30) -> list[DayRow]:
    """One row per day of the last `days` (UTC), oldest first, days without posts as zeros."""
    today = timezone.now().date()
    since = today - dt.timedelta(days=days - 1)
    stored = {
        row["day"]: row
        for row in SignupFormDay.objects.filter(form=form, day__gte=since).values(
            "day", "submissions", "confirmations"
        )
    }
    rows = []
    for i in range(days):
        day = since + dt.timedelta(days=i)
        row: dict[str, Any] = stored.get(day, {})
        rows.append(DayRow(day, row.get("submissions", 0), row.get("confirmations", 0)))
    return rows


def chart_svg(rows: list[DayRow], *, colour: str = "#4f46e5") -> SafeString:
    """Bars per day: submissions (grey) with confirmations (the form's colour) in front; no script."""
    width, height, gap = 16, 120, 4
    top = max([r.submissions for r in rows] + [1])

    def bar(i: int, value: int, fill: str, title: str) -> tuple[Any, ...]:
        h = round(height * value / top)
        return (i * (width + gap), height - h, width, h, fill, title)

    bars = []
    for i, r in enumerate(rows):
        label = f"{r.day.isoformat()}: {r.submissions} submissions, {r.confirmations} confirmations"
        bars.append(bar(i, r.submissions, "#d4d4d8", label))
        bars.append(bar(i, r.confirmations, colour, label))
    body = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>',
        bars,
    )
    total_width = len(rows) * (width + gap)
    return format_html(
        '<svg class="signup-chart" role="img" aria-label="Submissions and confirmations per day" '
        'width="{}" height="{}" viewBox="0 0 {} {}">{}</svg>'
        '<p style="font-size:12px;color:#71717a">{} – {} · grey: submissions · colour: confirmations</p>',
        total_width,
        height,
        total_width,
        height,
        body,
        rows[0].day.isoformat() if rows else "",
        rows[-1].day.isoformat() if rows else "",
    )
