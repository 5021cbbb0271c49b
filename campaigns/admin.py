"""The campaign back-office (D-12): editor (forms, never JSON), pre-flight panel, lifecycle buttons that show the
refusal message, live progress, the report, and the platform-staff review queue (CMP-12)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404
from django.urls import path, reverse

from campaigns import abtest, services
from campaigns.admin_confirm import CONFIRMED_VERBS, campaign_confirmation
from campaigns.admin_forms import CampaignForm
from campaigns.admin_pages import CampaignPages
from campaigns.admin_panels import CampaignPanels
from campaigns.admin_reports import CampaignReportViews
from campaigns.models import Campaign
from owlat.admin_confirm import confirmation_page
from owlat.admin_tenancy import TenantModelAdmin, get_tenancy
from owlat.permissions import Authority
from owlat.sandbox import sandboxed_response

BUTTONS = {
    "draft": [
        ("test-send", "Send test…"),
        ("send", "Send now…"),
        ("schedule", "Schedule…"),
        ("duplicate", "Duplicate"),
    ],
    "scheduled": [
        ("test-send", "Send test…"),
        ("send", "Send now…"),
        ("schedule", "Reschedule…"),
        ("unschedule", "Unschedule"),
        ("cancel", "Cancel…"),
    ],
    "sending": [
        ("pause", "Pause…"),
        ("cancel", "Cancel the send…"),
        ("winner-A", "Declare A the winner"),
        ("winner-B", "Declare B the winner"),
    ],
    "paused": [("resume", "Resume…"), ("cancel", "Cancel the send…")],
    "sent": [("test-send", "Send test…"), ("duplicate", "Duplicate")],
    "cancelled": [("duplicate", "Duplicate")],
    "pending_review": [],
}


def _uuid_or_none(value: Any) -> Any:
    import uuid

    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def _manual_test_running(campaign: Campaign) -> bool:
    """CMP-17: the "choose winner" buttons are shown only for a manual A/B test while it is testing (the others
    are declared automatically after their window)."""
    return campaign.ab_test_status == "testing" and campaign.ab_config().get("winnerCriteria") == "manual"


@admin.register(Campaign)
class CampaignAdmin(CampaignPages, CampaignPanels, CampaignReportViews, TenantModelAdmin):
    form = CampaignForm
    manage_permission = "campaigns:manage"
    feature_flag = "campaigns"
    change_form_template = "admin/campaigns/campaign/change_form.html"
    list_display = (
        "name",
        "status",
        "audience_label",
        "scheduled_at",
        "sent_at",
        "stats_sent",
        "open_rate",
        "updated_at",
    )
    list_filter = ("status",)
    search_fields = ("name", "subject")
    readonly_fields = (
        "status",
        "scheduled_at",
        "sent_at",
        "content_block_reason",
        "preview_link",
        "eligible_count",
        "preflight_panel",
        "review_panel",
        "progress",
        "report",
        "ab_results",
        "activity_chart",
    )

    def get_fieldsets(self, request: HttpRequest, obj: Campaign | None = None):
        editing = obj is None or obj.status == "draft"
        basics = ["name", "status", "content_block_reason"] if obj else ["name"]
        content = ["email_template", "preview_link", "subject"]
        sender = (["sender"] if editing else []) + ["from_name", "from_email", "reply_to"]
        audience = (["audience_kind", "audience_topic", "audience_segment"] if editing else []) + [
            "eligible_count"
        ]
        sets = [
            (None, {"fields": basics}),
            ("Content", {"fields": content}),
            ("Sender", {"fields": sender}),
            ("Audience", {"fields": audience}),
        ]
        if editing:
            sets.append(
                (
                    "A/B test",
                    {
                        "fields": [
                            "ab_enabled",
                            "ab_test_type",
                            "ab_variant_b_subject",
                            "ab_variant_b_template",
                            "ab_split_percentage",
                            "ab_winner_criteria",
                            "ab_test_duration",
                        ]
                    },
                )
            )
        sets.append(("Archive", {"fields": ["archive_enabled"]}))
        if obj is not None and obj.status == "pending_review":
            sets.insert(1, ("Held for review", {"fields": ["review_panel"]}))
        if obj is not None:
            sets.append(("Pre-flight", {"fields": ["preflight_panel"]}))
            sets.append(("Schedule", {"fields": ["scheduled_at", "sent_at"]}))
            sets.append(("Progress", {"fields": ["progress"]}))
            sets.append(("Report", {"fields": ["report", "ab_results", "activity_chart"]}))
        return sets

    def get_form(
        self, request: HttpRequest, obj: Campaign | None = None, change: bool = False, **kwargs: Any
    ):
        kwargs["fields"] = None
        form_class = super().get_form(request, obj, change=change, **kwargs)
        org = self.form_organization(request, obj)

        class OrganizationForm(form_class):
            def __init__(self, *args: Any, **kw: Any) -> None:
                super().__init__(*args, **kw)
                self.setup_organization(org.pk if org else None)

        OrganizationForm.__name__ = form_class.__name__
        return OrganizationForm

    def get_readonly_fields(self, request: HttpRequest, obj: Campaign | None = None):
        return (
            list(self.readonly_fields)
            if obj is None or obj.status == "draft"
            else [*self.readonly_fields, *CampaignForm.Meta.fields]  # the editor's fields: draft only
        )

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("email_template")

    def _may_manage(self, request: HttpRequest) -> bool:
        """`campaigns:manage` (CMP-11) for the buttons; the services check it again on every write."""
        return self._authority(request).allows("campaigns:manage")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and self._may_manage(request)

    def has_change_permission(self, request: HttpRequest, obj: Campaign | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._may_manage(request)

    def has_delete_permission(self, request: HttpRequest, obj: Campaign | None = None) -> bool:
        if obj is not None and obj.status == "sending":
            return False
        return super().has_delete_permission(request, obj) and self._may_manage(request)

    # -- saving through the services -------------------------------------------------------------------------------
    def save_model(self, request: HttpRequest, obj: Campaign, form: Any, change: bool) -> None:
        fields = form.service_fields()
        actor, authority = self.actor(request), self._authority(request)
        if not change:
            org = get_tenancy(request).organization or obj.organization
            created = services.campaign_create(
                organization_id=org.pk, actor=actor, fields=fields, authority=authority
            )
            obj.pk, obj._state.adding = created.pk, False
            campaign = created
        else:
            campaign = services.campaign_update(
                campaign=obj, actor=actor, changes=fields, authority=authority
            )
        if form.cleaned_data.get("ab_enabled") and form.cleaned_data.get("ab_config"):
            if campaign.ab_config() != form.cleaned_data["ab_config"]:
                outcome = abtest.ab_enable(
                    campaign=campaign, config=form.cleaned_data["ab_config"], actor=actor, authority=authority
                )
                if not outcome.ok:
                    messages.error(request, outcome.message)
        elif campaign.is_ab_test:
            outcome = abtest.ab_disable(campaign=campaign, actor=actor, authority=authority)
            if not outcome.ok:
                messages.error(request, outcome.message)

    def delete_model(self, request: HttpRequest, obj: Campaign) -> None:
        services.campaign_delete(campaign=obj, actor=self.actor(request), authority=self._authority(request))

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for campaign in queryset:
            try:
                services.campaign_delete(
                    campaign=campaign, actor=self.actor(request), authority=self._authority(request)
                )
            except services.CampaignError as exc:
                messages.error(request, f'"{campaign.name}": {exc.message}')

    # -- buttons ------------------------------------------------------------------------------------------------------
    def get_urls(self):
        return [
            path(
                "eligible-count/",
                self.admin_site.admin_view(self.eligible_count_view),
                name="campaigns_campaign_eligible_count",
            ),
            path(
                "<uuid:object_id>/preview/",
                self.admin_site.admin_view(self.preview_view),
                name="campaigns_campaign_preview",
            ),
            *self.page_urls(),
            path(
                "<uuid:object_id>/transition/<str:verb>/",
                self.admin_site.admin_view(self.transition_view),
                name="campaigns_campaign_transition",
            ),
            *self.report_urls(),
            *super().get_urls(),
        ]

    def _campaign(self, request: HttpRequest, object_id: Any) -> Campaign:
        campaign = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_permission(request, campaign):
            raise PermissionDenied
        return campaign

    def _authority(self, request: HttpRequest) -> Authority:
        tenancy = get_tenancy(request)
        return Authority.platform_staff() if tenancy.is_platform_staff else Authority.member(tenancy.role)

    def _back(self, campaign: Campaign) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:campaigns_campaign_change", args=[campaign.pk]))

    def preview_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        from templates.rendering import render_template

        campaign = self._campaign(request, object_id)
        if campaign.email_template is None:
            return HttpResponse("No template selected.", content_type="text/plain")
        rendered = render_template(
            campaign.email_template,
            variables={"email": "jane@example.com", "firstName": "Jane", "lastName": "Doe"},
            subject_override=campaign.subject or None,
        )
        return sandboxed_response(rendered.html)

    def eligible_count_view(self, request: HttpRequest) -> HttpResponse:
        """The editor's live count (`?kind=topic&topic=<id>` or `?kind=segment&segment=<id>`, and `campaign=<id>`
        on a change page): the eligible recipients of the audience being picked, before it is saved. The
        organization is the campaign's (tenant-filtered) or the active one; JSON `{"count": n}`, or 400 naming
        the field."""
        from campaigns.audience import AudienceError, audience_clean, audience_eligible_count

        if not self.has_view_permission(request):
            raise PermissionDenied
        params = request.GET
        organization_id = get_tenancy(request).organization_id
        if params.get("campaign"):
            campaign = self.get_queryset(request).filter(pk=_uuid_or_none(params["campaign"])).first()
            if campaign is None:
                return JsonResponse({"error": "Campaign not found", "field": "campaign"}, status=404)
            organization_id = campaign.organization_id
        if organization_id is None:
            return JsonResponse(
                {"error": "Choose an organization with the switch first", "field": "organization"}, status=400
            )
        kind = params.get("kind") or ""
        if not kind:
            return JsonResponse({"count": 0})
        raw = {"kind": kind, "topicId": params.get("topic"), "segmentId": params.get("segment")}
        try:
            audience = audience_clean(organization_id, raw)
        except AudienceError as exc:
            return JsonResponse({"error": exc.message, "field": exc.field}, status=400)
        return JsonResponse({"count": audience_eligible_count(organization_id, audience)})

    def transition_view(self, request: HttpRequest, object_id: Any, verb: str) -> HttpResponse:
        """A lifecycle button. An irreversible verb (`CONFIRMED_VERBS`) shows its confirmation page on GET, and
        on a POST that did not come from that page; only the page's POST (`post=yes`, as Django's own confirmation pages) acts."""
        if request.method != "POST" and verb not in CONFIRMED_VERBS:
            return HttpResponseNotAllowed(["POST"])
        campaign = self._campaign(request, object_id)
        if verb in CONFIRMED_VERBS and (request.method != "POST" or request.POST.get("post") != "yes"):
            if not self._may_manage(request):
                raise PermissionDenied
            return confirmation_page(
                self,
                request,
                campaign,
                campaign_confirmation(campaign, verb),
                action_url=reverse("admin:campaigns_campaign_transition", args=[campaign.pk, verb]),
                back_url=reverse("admin:campaigns_campaign_change", args=[campaign.pk]),
            )
        actor, authority = self.actor(request), self._authority(request)
        common = {"campaign_id": campaign.pk, "organization_id": campaign.organization_id, "actor": actor}
        if verb == "duplicate":
            try:
                copy = services.campaign_duplicate(campaign=campaign, actor=actor, authority=authority)
            except services.CampaignError as exc:
                messages.error(request, exc.message)
                return self._back(campaign)
            messages.success(request, f'Created "{copy.name}".')
            return HttpResponseRedirect(reverse("admin:campaigns_campaign_change", args=[copy.pk]))
        if verb.startswith("winner-"):
            outcome = abtest.ab_declare_winner(**common, winner=verb[-1], authority=authority)
        elif verb in services.ACTIONS:
            outcome = services.ACTIONS[verb](**common, authority=authority)
        else:
            raise PermissionDenied
        if outcome.ok:
            note = " (already in that state)" if outcome.applied == "recorded" else ""
            messages.success(request, f"Done: {verb}{note}.")
        else:
            messages.error(request, outcome.message or outcome.reason)
        return self._back(campaign)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            buttons = []
            for verb, label in BUTTONS.get(obj.status, []):
                if verb.startswith("winner-") and not _manual_test_running(obj):
                    continue
                if verb in ("schedule", "test-send"):
                    url = reverse(f"admin:campaigns_campaign_{verb.replace('-', '_')}", args=[obj.pk])
                else:
                    url = reverse("admin:campaigns_campaign_transition", args=[obj.pk, verb])
                buttons.append((url, label, verb in ("schedule", "test-send", *CONFIRMED_VERBS)))
            context["lifecycle_buttons"] = buttons
            context["auto_refresh"] = obj.status == "sending"
        # the editor's live count and the template admin's preview of the template being picked (the campaign's
        # own preview needs a save)
        sentinel = "00000000-0000-0000-0000-000000000000"
        context["editor_urls"] = {
            "eligibleCount": reverse("admin:campaigns_campaign_eligible_count"),
            "campaign": str(obj.pk) if obj is not None else "",
            "templatePreview": reverse("admin:templates_emailtemplate_preview", args=[sentinel]).replace(
                sentinel, "{id}"
            ),
        }
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )


# The review queue (CMP-12) lives in its own module; importing it registers it.
from campaigns.admin_review import CampaignReviewAdmin  # noqa: E402

__all__ = ["CampaignAdmin", "CampaignReviewAdmin"]
