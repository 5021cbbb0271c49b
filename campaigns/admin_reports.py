"""The campaign report page and its CSV export in the admin, on their own URLs beside the change page
(`report_urls` is added to `CampaignAdmin.get_urls`). The campaign is read through the admin's tenant-scoped
queryset, so an operator sees only their organization's campaigns; the figures come from `campaigns.reports`."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from campaigns import reports
from campaigns.admin_followups import CampaignFollowUpViews
from campaigns.models import Campaign

SERIES_COLOURS = {"sent": "#64748b", "opened": "#2563eb", "clicked": "#16a34a"}
_W, _H, _PAD_L, _PAD_B, _PAD_T = 720, 220, 44, 36, 12


def activity_svg(series: reports.ActivitySeries) -> SafeString:
    """A small server-rendered bar chart of the series, three bars per bucket (no script, no external asset)."""
    if not series.buckets:
        return mark_safe('<p class="chart-empty">No activity yet.</p>')
    peak = max(max(counts.values()) for _, counts in series.buckets) or 1
    n = len(series.buckets)
    inner_w, inner_h = _W - _PAD_L - 8, _H - _PAD_B - _PAD_T
    slot = inner_w / n
    bar = max(1.0, min(slot / 4, 28.0))
    bottom = _PAD_T + inner_h
    bars = []
    for i, (start, counts) in enumerate(series.buckets):
        left = _PAD_L + i * slot + (slot - 3 * bar) / 2
        for j, (name, colour) in enumerate(SERIES_COLOURS.items()):
            height = counts[name] / peak * inner_h
            bars.append(
                format_html(
                    '<rect data-series="{}" x="{}" y="{}" width="{}" height="{}" fill="{}">'
                    "<title>{} {}: {}</title></rect>",
                    name,
                    f"{left + j * bar:.1f}",
                    f"{bottom - height:.1f}",
                    f"{bar:.1f}",
                    f"{height:.1f}",
                    colour,
                    _label(start, series.unit),
                    name,
                    counts[name],
                )
            )
    ticks = sorted({0, n // 2, n - 1})
    x_labels = format_html_join(
        "",
        '<text x="{}" y="{}" font-size="11" text-anchor="middle" fill="#475569">{}</text>',
        (
            (f"{_PAD_L + (i + 0.5) * slot:.1f}", _H - 14, _label(series.buckets[i][0], series.unit))
            for i in ticks
        ),
    )
    axes = format_html(
        '<line x1="{l}" y1="{b}" x2="{r}" y2="{b}" stroke="#cbd5e1"/>'
        '<line x1="{l}" y1="{t}" x2="{l}" y2="{b}" stroke="#cbd5e1"/>'
        '<text x="{tx}" y="{ty}" font-size="11" text-anchor="end" fill="#475569">{peak}</text>'
        '<text x="{tx}" y="{b}" font-size="11" text-anchor="end" fill="#475569">0</text>',
        l=_PAD_L,
        r=_W - 8,
        t=_PAD_T,
        b=bottom,
        tx=_PAD_L - 6,
        ty=_PAD_T + 10,
        peak=peak,
    )
    legend = format_html_join(
        " ", '<span style="color:{}">■ {}</span>', ((c, n) for n, c in SERIES_COLOURS.items())
    )
    return format_html(
        '<svg class="campaign-activity" role="img" aria-label="sends, first opens and first clicks per {unit}" '
        'viewBox="0 0 {w} {h}" width="{w}" height="{h}">{axes}{bars}{x}</svg><div>{legend} · per {unit}{more}</div>',
        unit=series.unit,
        w=_W,
        h=_H,
        axes=axes,
        bars=mark_safe("".join(bars)),
        x=x_labels,
        legend=legend,
        more=f" (first {reports.MAX_BUCKETS} {series.unit}s shown)" if series.truncated else "",
    )


def _label(start: Any, unit: str) -> str:
    return start.strftime("%Y-%m-%d") if unit == "day" else start.strftime("%m-%d %H:00")


def report_context(campaign: Campaign) -> dict[str, Any]:
    from delivery.services import campaign_send_stats

    stats = campaign_send_stats(campaign.pk)
    return {
        "campaign": campaign,
        "rates": reports.report_rates(stats),
        "links": reports.link_clicks(campaign),
        "chart": activity_svg(reports.activity_series(campaign)),
        "bounces": reports.bounce_breakdown(campaign),
        "stats": stats,
    }


class CampaignReportViews(CampaignFollowUpViews):
    """Mixed into `CampaignAdmin`: the report page, the streamed CSV of per-recipient outcomes and the
    follow-up pages."""

    def report_urls(self) -> list:
        view = self.admin_site.admin_view  # type: ignore[attr-defined]
        return [
            path("<uuid:object_id>/report/", view(self.report_view), name="campaigns_campaign_report"),
            path(
                "<uuid:object_id>/report.csv",
                view(self.report_csv_view),
                name="campaigns_campaign_report_csv",
            ),
            *self.followup_urls(),
        ]

    def report_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        campaign = self._campaign(request, object_id)  # type: ignore[attr-defined]
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "title": f"Report: {campaign.name}",
            "opts": Campaign._meta,
            "original": campaign,
            **report_context(campaign),
            "followups": self.followup_links(campaign),
        }
        return TemplateResponse(request, "admin/campaigns/campaign/report.html", context)

    def report_csv_view(self, request: HttpRequest, object_id: Any) -> StreamingHttpResponse:
        campaign = self._campaign(request, object_id)  # type: ignore[attr-defined]
        response = StreamingHttpResponse(reports.outcome_csv_lines(campaign), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-outcomes.csv"'
        return response
