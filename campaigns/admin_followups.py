"""Follow-up pages of a sent campaign in the admin: "Resend to non-openers" (a form with the new draft's name and
subject, the count of non-openers now, and a warning when opens were not measured) and "Retry failed" (a
confirmation with the count of rows a retry re-queues). Mixed into `CampaignAdmin` through the report views."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from campaigns import followups
from campaigns.models import Campaign
from campaigns.services import CampaignError
from owlat.forms.nested import styled


class ExplainForm(forms.Form):
    email = forms.EmailField(
        label="Email address",
        max_length=254,
        required=False,
        help_text="A contact of this organization: the page says whether they would receive the campaign and, "
        "if not, which rule leaves them out.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        styled(self)


class NonOpenersForm(forms.Form):
    name = forms.CharField(
        label="Name of the new campaign", max_length=200, help_text="Shown only in the back-office."
    )
    subject = forms.CharField(
        label="Subject",
        max_length=998,
        required=False,
        help_text="A new subject often wins back readers; empty keeps the original campaign's subject.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        styled(self)


class CampaignFollowUpViews:
    def followup_urls(self) -> list:
        view = self.admin_site.admin_view  # type: ignore[attr-defined]
        return [
            path(
                "<uuid:object_id>/follow-up/non-openers/",
                view(self.non_openers_view),
                name="campaigns_campaign_non_openers",
            ),
            path(
                "<uuid:object_id>/follow-up/retry-failed/",
                view(self.retry_failed_view),
                name="campaigns_campaign_retry_failed",
            ),
            path("<uuid:object_id>/audience/", view(self.audience_view), name="campaigns_campaign_audience"),
        ]

    def followup_links(self, campaign: Campaign) -> list[tuple[str, str]]:
        audience = [
            ("Explain the audience", reverse("admin:campaigns_campaign_audience", args=[campaign.pk]))
        ]
        if campaign.status not in followups.FOLLOW_UP_SOURCES:
            return audience
        return [
            *audience,
            ("Resend to non-openers…", reverse("admin:campaigns_campaign_non_openers", args=[campaign.pk])),
            ("Retry failed sends…", reverse("admin:campaigns_campaign_retry_failed", args=[campaign.pk])),
        ]

    def _followup_page(
        self, request: HttpRequest, campaign: Campaign, title: str, **extra: Any
    ) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "title": title,
            "opts": Campaign._meta,
            "original": campaign,
            "campaign": campaign,
            "preview": extra.pop("preview", None) or followups.followup_preview(campaign),
            "report_url": reverse("admin:campaigns_campaign_report", args=[campaign.pk]),
            # the shared form page (owlat/templates/admin/owlat/form_page.html)
            "subtitle": str(campaign),
            "back_url": reverse("admin:campaigns_campaign_report", args=[campaign.pk]),
            "back_label": "Back, change nothing",
            **extra,
        }
        return TemplateResponse(request, "admin/campaigns/campaign/followup.html", context)

    def non_openers_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        campaign = self._campaign(request, object_id)  # type: ignore[attr-defined]
        initial = {"name": f"{campaign.name} (to non-openers)"[:200], "subject": campaign.subject or ""}
        form = NonOpenersForm(request.POST or None, initial=initial)
        if request.method == "POST" and form.is_valid():
            try:
                draft = followups.campaign_resend_to_non_openers(
                    campaign=campaign,
                    actor=self.actor(request),  # type: ignore[attr-defined]
                    authority=self._authority(request),  # type: ignore[attr-defined]
                    name=form.cleaned_data["name"],
                    subject=form.cleaned_data["subject"] or None,
                )
            except CampaignError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(
                    request, f"Draft “{draft.name}” created for the non-openers; check it, then send it."
                )
                return HttpResponseRedirect(reverse("admin:campaigns_campaign_change", args=[draft.pk]))
        return self._followup_page(
            request,
            campaign,
            f"Resend “{campaign.name}” to non-openers",
            form=form,
            verb="non_openers",
            submit_label="Create the draft",
        )

    def retry_failed_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        campaign = self._campaign(request, object_id)  # type: ignore[attr-defined]
        if request.method == "POST":
            try:
                count = followups.campaign_retry_failed(
                    campaign=campaign,
                    actor=self.actor(request),  # type: ignore[attr-defined]
                    authority=self._authority(request),  # type: ignore[attr-defined]
                )
            except CampaignError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, f"Re-queued {count} failed send(s).")
            return HttpResponseRedirect(reverse("admin:campaigns_campaign_report", args=[campaign.pk]))
        preview = followups.followup_preview(campaign)
        count = preview.retryable_failed
        return self._followup_page(
            request,
            campaign,
            f"Retry the failed sends of “{campaign.name}”",
            verb="retry",
            preview=preview,
            submit_label=f"Retry {count} send{'s' if count != 1 else ''}",
            submit_disabled=not count,
            disabled_attrs={"disabled": "disabled"},
        )

    def audience_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        """Who would receive the campaign now, the count per exclusion rule, and (`?email=`) one contact's why."""
        from campaigns.explain import audience_breakdown, audience_explain
        from owlat.contacts import normalize_email
        from owlat.models import Contact

        campaign = self._campaign(request, object_id)  # type: ignore[attr-defined]
        email = (request.GET.get("email") or "").strip()[:254]
        explanation, lookup_error = None, ""
        if email:
            contact = Contact.objects.filter(
                organization_id=campaign.organization_id, email__iexact=normalize_email(email)
            ).first()
            if contact is None:
                lookup_error = f"No contact with the address {email} in this organization."
            else:
                explanation = audience_explain(campaign, contact)
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "title": f"Audience of “{campaign.name}”",
            "opts": Campaign._meta,
            "original": campaign,
            "campaign": campaign,
            "breakdown": audience_breakdown(campaign),
            "email": email,
            "explain_form": ExplainForm(initial={"email": email}),
            "explanation": explanation,
            "lookup_error": lookup_error,
            "report_url": reverse("admin:campaigns_campaign_report", args=[campaign.pk]),
        }
        return TemplateResponse(request, "admin/campaigns/campaign/audience.html", context)
