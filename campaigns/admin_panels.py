"""The campaign change page's read-only panels: preview link, live eligible count, pre-flight,
live progress, the report with rates, the A/B results per variant and the activity chart. Mixed into
`campaigns.admin.CampaignAdmin`."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from campaigns import abtest
from campaigns.models import Campaign, CampaignSendJob
from campaigns.preflight import validate_ready_to_send

#: the change page reloads every 5 s while a campaign sends; its row aggregations (the stats buckets, the hourly
#: chart) are computed at most once per this many seconds per campaign and process, not on every reload; in
#: any other status (nothing reloads, and a send that just ended must show its final figures) they are fresh
STATS_CACHE_SECONDS = 30


def _cached(kind: str, campaign: Campaign, compute: Any) -> Any:
    from django.core.cache import cache

    if campaign.status != "sending":
        return compute()
    key = f"owlat:campaign-{kind}:{campaign.pk}"
    hit = cache.get(key)
    if hit is None:
        hit = compute()
        cache.set(key, hit, STATS_CACHE_SECONDS)
    return hit


def _send_stats(campaign: Campaign) -> dict[str, Any]:
    from delivery.services import campaign_send_stats

    return _cached("stats", campaign, lambda: campaign_send_stats(campaign.pk))


def _rate(part: int, whole: int) -> str:
    return f"{part / whole * 100:.2f} %" if whole else "0.00 %"


class CampaignPanels:
    # -- read-only panels -------------------------------------------------------------------------------------------
    @admin.display(description="audience")
    def audience_label(self, obj: Campaign) -> str:
        return (obj.audience or {}).get("kind", "—") if isinstance(obj.audience, dict) else "—"

    @admin.display(description="open rate")
    def open_rate(self, obj: Campaign) -> str:
        return _rate(obj.stats_opened, obj.stats_delivered)

    @admin.display(description="preview")
    def preview_link(self, obj: Campaign) -> str:
        if obj._state.adding or not obj.email_template_id:
            return format_html('<span id="campaign-preview">{}</span>', "Choose a template to preview it.")
        url = reverse("admin:campaigns_campaign_preview", args=[obj.pk])
        return format_html(
            '<span id="campaign-preview"><a href="{}" target="_blank">Open the rendered preview</a></span>',
            url,
        )

    @admin.display(description="eligible recipients now")
    def eligible_count(self, obj: Campaign) -> str:
        from campaigns.audience import audience_eligible_count

        if obj._state.adding:
            count: Any = "—"
        elif obj.status not in ("draft", "scheduled"):
            # the audience was frozen at send: the walk's own numbers are under Progress (and the page reloads
            # every 5 s while sending, so no audience walk here)
            count = "see Progress (counted when the send started)"
        else:
            count = audience_eligible_count(obj.organization_id, obj.audience)
        if obj._state.adding:
            return format_html('<span id="eligible-count">{}</span>', count)
        return format_html(
            '<span id="eligible-count">{}</span> · <a id="explain-audience" href="{}">who is excluded, and why</a>',
            count,
            reverse("admin:campaigns_campaign_audience", args=[obj.pk]),
        )

    @admin.display(description="readiness")
    def preflight_panel(self, obj: Campaign) -> str:
        if obj.status not in ("draft", "scheduled"):
            return f"Not applicable: the campaign is {obj.get_status_display().lower()}."
        result = validate_ready_to_send(obj)
        warnings = format_html_join("", "<li>{}</li>", ((w,) for w in result.warnings))
        if result.ready:
            return format_html('<strong style="color:#15803d">Ready to send.</strong><ul>{}</ul>', warnings)
        return format_html(
            '<strong style="color:#b91c1c">Not ready</strong> ({}): {}<ul>{}</ul>',
            result.reason,
            result.message,
            warnings,
        )

    @admin.display(description="why it waits")
    def review_panel(self, obj: Campaign) -> str:
        """Why a campaign is held (the content scan's level, score and each rule that hit) and what happens
        next; the send does not start until platform staff decide."""
        from campaigns import review

        if obj.status != "pending_review":
            return "Not held for review."
        scan = review.latest_scan(obj)
        from campaigns.admin_review import scan_flag_items

        rules = scan_flag_items(scan.flags if scan else [])
        score = format_html("{} risk, score {}/100", scan.level, scan.score) if scan else "no scan recorded"
        return format_html(
            '<div id="review-panel"><p>The content scan held this campaign before any mail went out: {}.</p>'
            "<ul>{}</ul><p>Platform staff review it in <em>Campaigns held for review</em>: <strong>approve</strong> "
            "and it starts sending to its audience as it is, or <strong>reject</strong> and it returns to draft "
            "with their reason, for you to change and send again. Nothing is sent meanwhile.</p></div>",
            score,
            rules,
        )

    @admin.display(description="progress")
    def progress(self, obj: Campaign) -> str:
        job = CampaignSendJob.objects.filter(campaign=obj).first()
        s = _send_stats(obj)
        walk = (
            f"walk {job.phase} ({job.variant_mode}): {job.pages} pages, {job.total_candidates} eligible, "
            f"{job.enqueued_count} enqueued"
            if job
            else "not started"
        )
        return format_html(
            "{}<br>sent {} · failed {} · still queued {} · outcome unknown {}",
            walk,
            s["sent"],
            s["failed"],
            s["queued"],
            s["outcome_unknown"],
        )

    @admin.display(description="results")
    def report(self, obj: Campaign) -> str:
        from campaigns.reports import report_rates

        rows = [(label, count, rate or "") for label, count, rate in report_rates(_send_stats(obj))]
        if rows[2][2] == "":
            rows[2] = (rows[2][0], rows[2][1], "not measured (no message carried the open pixel)")
        body = format_html_join("", "<tr><th>{}</th><td>{}</td><td>{}</td></tr>", rows)
        link = (
            format_html(
                '<p><a id="full-report" href="{}">Full report: clicks per link, over time, bounces, CSV export</a></p>',
                reverse("admin:campaigns_campaign_report", args=[obj.pk]),
            )
            if not obj._state.adding
            else ""
        )
        return format_html(
            '<table class="campaign-report"><tr><th></th><th>count</th><th>rate</th></tr>{}</table>{}',
            body,
            link,
        )

    @admin.display(description="A/B results")
    def ab_results(self, obj: Campaign) -> str:
        if not obj.is_ab_test:
            return "Not an A/B test."
        per = _cached("ab", obj, lambda: {v: abtest.variant_stats(obj.pk, v) for v in ("A", "B")})
        rows = [
            (
                v,
                per[v]["sent"],
                per[v]["delivered"],
                per[v]["opened"],
                per[v]["clicked"],
                per[v]["openRate"],
                per[v]["clickRate"],
            )
            for v in ("A", "B")
        ]
        body = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} %</td><td>{} %</td></tr>",
            rows,
        )
        return format_html(
            'Status: {} · winner: {}<table class="campaign-ab"><tr><th></th><th>sent</th><th>delivered</th><th>opened</th>'
            "<th>clicked</th><th>open rate</th><th>click rate</th></tr>{}</table>",
            obj.ab_test_status or "—",
            obj.ab_winner or "—",
            body,
        )

    @admin.display(description="over time")
    def activity_chart(self, obj: Campaign) -> str:
        from campaigns.admin_reports import activity_svg
        from campaigns.reports import activity_series

        return activity_svg(_cached("series", obj, lambda: activity_series(obj)))
