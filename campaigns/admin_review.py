"""The campaign review queue in the admin (CMP-12): platform staff approve or reject held campaigns."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from campaigns import review
from campaigns.admin_forms import RejectForm
from campaigns.models import Campaign, CampaignReview
from owlat.admin_confirm import Confirmation, confirmation_page, form_page
from owlat.admin_tenancy import TenantModelAdmin, get_tenancy
from owlat.permissions import Authority
from owlat.sandbox import sandboxed_frame, sandboxed_response


def scan_flag_items(flags: list[dict[str, Any]]) -> str:
    """`<li>` per rule that hit: the rule, its severity, what it found and the offending text with the match marked
    (flags stored before excerpts were kept show without one)."""
    items = []
    for flag in flags:
        excerpt, match = str(flag.get("excerpt") or ""), str(flag.get("match") or "")
        quoted = ""
        if excerpt:
            head, found, tail = excerpt.partition(match) if match else (excerpt, "", "")
            quoted = format_html(
                '<br><q class="scan-excerpt text-font-subtle-light">{}<mark>{}</mark>{}</q>',
                head,
                found,
                tail,
            )
        items.append(
            format_html(
                "<li><strong>{}</strong> ({}): {}{}</li>",
                flag.get("rule"),
                flag.get("severity"),
                flag.get("description"),
                quoted,
            )
        )
    return format_html_join("", "{}", ((item,) for item in items))


# --- the review queue (CMP-12): platform staff only ---------------------------------------------------------------


@admin.register(CampaignReview)
class CampaignReviewAdmin(TenantModelAdmin):
    platform_only = True
    read_only = False
    list_display = ("name", "organization", "scan_level", "scan_score", "scan_hits", "updated_at")
    readonly_fields = (
        "name",
        "organization",
        "subject",
        "scan_level",
        "scan_score",
        "scan_flags",
        "rendered",
    )
    fields = readonly_fields
    change_form_template = "admin/campaigns/campaignreview/change_form.html"
    actions = ["approve_selected"]

    def get_queryset(self, request: HttpRequest):
        from django.db.models import JSONField, OuterRef, Subquery

        from campaigns.models import ContentScanResult

        latest = ContentScanResult.objects.filter(campaign=OuterRef("pk")).order_by("-scanned_at")
        return (
            super()
            .get_queryset(request)
            .filter(status="pending_review")
            .select_related("organization", "email_template")
            .annotate(
                _scan_level=Subquery(latest.values("level")[:1]),
                _scan_score=Subquery(latest.values("score")[:1]),
                _scan_flags=Subquery(latest.values("flags")[:1], output_field=JSONField()),
            )
        )

    def _authority(self, request: HttpRequest) -> Authority:
        """The review services refuse anyone but platform staff whatever the admin shows (CMP-12)."""
        tenancy = get_tenancy(request)
        return Authority.platform_staff() if tenancy.is_platform_staff else Authority.member(tenancy.role)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return get_tenancy(request).is_platform_staff

    @admin.display(description="level")
    def scan_level(self, obj: Campaign) -> str:
        return getattr(obj, "_scan_level", None) or "—"

    @admin.display(description="score")
    def scan_score(self, obj: Campaign) -> str:
        score = getattr(obj, "_scan_score", None)
        return f"{score}/100" if score is not None else "—"

    @admin.display(description="what hit")
    def scan_hits(self, obj: Campaign) -> str:
        """Each rule that hit with the offending text, short enough for the list."""
        flags = getattr(obj, "_scan_flags", None) or []
        if not isinstance(flags, list) or not flags:
            return "—"
        return format_html_join(
            "",
            "<div><strong>{}</strong>{}</div>",
            (
                (
                    f.get("rule"),
                    format_html(": “<mark>{}</mark>”", str(f["match"])[:80]) if f.get("match") else "",
                )
                for f in flags[:5]
                if isinstance(f, dict)
            ),
        )

    @admin.display(description="matched rules")
    def scan_flags(self, obj: Campaign) -> str:
        scan = review.latest_scan(obj)
        if not scan:
            return "—"
        return format_html('<ul id="scan-flags">{}</ul>', scan_flag_items(scan.flags))

    @admin.display(description="rendered content")
    def rendered(self, obj: Campaign) -> str:
        from campaigns.orchestrator import scan_input

        if obj.email_template is None:
            return "—"
        subject, _html = scan_input(obj, obj.email_template)
        url = reverse("admin:campaigns_campaignreview_rendered", args=[obj.pk])
        return format_html(
            "<strong>{}</strong>{}", subject, sandboxed_frame(url, title="Rendered content", height=420)
        )

    def rendered_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        """The content the scanner read, as a sandboxed document (owlat.sandbox) for the frame above."""
        from campaigns.orchestrator import scan_input

        if not get_tenancy(request).is_platform_staff:
            raise PermissionDenied
        campaign = get_object_or_404(Campaign, pk=object_id)
        if campaign.email_template is None:
            return sandboxed_response("")
        return sandboxed_response(scan_input(campaign, campaign.email_template)[1])

    def _approval(self, campaigns: list[Campaign]) -> Confirmation:
        from campaigns.audience import audience_eligible_count

        counts = [(c, audience_eligible_count(c.organization_id, c.audience)) for c in campaigns]
        total = sum(n for _, n in counts)
        return Confirmation(
            title="Approve and send?"
            if len(campaigns) == 1
            else f"Approve and send {len(campaigns)} campaigns?",
            label=f"Approve and send to {total} recipients",
            consequences=[
                "Each campaign starts sending at once to its eligible recipients, with the content that was "
                "scanned; its organization is told it was approved.",
                "Mail handed to the provider cannot be recalled.",
            ],
            facts=[(f"{c.name} ({c.organization})", f"{n} recipients") for c, n in counts],
        )

    @admin.action(description="Approve the selected campaigns (send them)…")
    def approve_selected(self, request: HttpRequest, queryset: Any) -> HttpResponse | None:
        """Django's intermediate-page pattern: the action first answers the confirmation page listing each
        campaign and its recipients; that page's POST (`post=yes`, as Django's own confirmation pages) approves them."""
        campaigns = list(queryset)
        if request.POST.get("post") != "yes":
            hidden = [("action", "approve_selected")]
            hidden += [(admin.helpers.ACTION_CHECKBOX_NAME, str(c.pk)) for c in campaigns]
            changelist = reverse("admin:campaigns_campaignreview_changelist")
            return confirmation_page(
                self,
                request,
                "Review queue",
                self._approval(campaigns),
                action_url=changelist,
                back_url=changelist,
                hidden=hidden,
            )
        for campaign in campaigns:
            outcome = review.review_approve(
                campaign_id=campaign.pk, actor=self.actor(request), authority=self._authority(request)
            )
            level = messages.SUCCESS if outcome.ok else messages.ERROR
            self.message_user(
                request, f'"{campaign.name}": {"approved" if outcome.ok else outcome.message}', level
            )
        return None

    def get_urls(self):
        return [
            path(
                "<uuid:object_id>/rendered/",
                self.admin_site.admin_view(self.rendered_view),
                name="campaigns_campaignreview_rendered",
            ),
            path(
                "<uuid:object_id>/decide/<str:decision>/",
                self.admin_site.admin_view(self.decide_view),
                name="campaigns_campaignreview_decide",
            ),
            *super().get_urls(),
        ]

    def decide_view(self, request: HttpRequest, object_id: Any, decision: str) -> HttpResponse:
        if not get_tenancy(request).is_platform_staff:
            raise PermissionDenied
        campaign = get_object_or_404(Campaign, pk=object_id)
        changelist = reverse("admin:campaigns_campaignreview_changelist")
        if decision == "approve":
            if request.method != "POST" or request.POST.get("post") != "yes":
                return confirmation_page(
                    self,
                    request,
                    campaign,
                    self._approval([campaign]),
                    action_url=reverse(
                        "admin:campaigns_campaignreview_decide", args=[campaign.pk, "approve"]
                    ),
                    back_url=reverse("admin:campaigns_campaignreview_change", args=[campaign.pk]),
                )
            outcome = review.review_approve(
                campaign_id=campaign.pk, actor=self.actor(request), authority=self._authority(request)
            )
            (messages.success if outcome.ok else messages.error)(
                request, "Approved: the campaign is sending." if outcome.ok else outcome.message
            )
            return HttpResponseRedirect(changelist)
        if decision != "reject":
            raise PermissionDenied
        form = RejectForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            outcome = review.review_reject(
                campaign_id=campaign.pk,
                actor=self.actor(request),
                reason=form.cleaned_data["reason"],
                authority=self._authority(request),
            )
            if outcome.ok:
                messages.success(request, "Rejected: the campaign is back in draft with the reason.")
                return HttpResponseRedirect(changelist)
            form.add_error(None, outcome.message)
        return form_page(
            self,
            request,
            campaign,
            title="Reject the campaign",
            form=form,
            submit="Reject",
            back_url=reverse("admin:campaigns_campaignreview_change", args=[campaign.pk]),
        )

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["approve_url"] = reverse(
                "admin:campaigns_campaignreview_decide", args=[obj.pk, "approve"]
            )
            context["reject_url"] = reverse("admin:campaigns_campaignreview_decide", args=[obj.pk, "reject"])
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )


__all__ = ["CampaignReviewAdmin"]
