"""The campaign change page's form pages, mixed into `campaigns.admin.CampaignAdmin`: Schedule (a date-time
picker on the organization's clock) and Send test (the campaign as it would go, to the operator by default)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import path, reverse

from campaigns import services
from campaigns.admin_confirm import (
    local_time,
    organization_zone,
    recipient_time_window,
    subject_preview,
)
from campaigns.admin_forms import ScheduleForm, TestSendForm
from owlat.admin_confirm import form_page


class CampaignPages:
    def page_urls(self) -> list[Any]:
        return [
            path(
                "<uuid:object_id>/schedule/",
                self.admin_site.admin_view(self.schedule_view),
                name="campaigns_campaign_schedule",
            ),
            path(
                "<uuid:object_id>/test-send/",
                self.admin_site.admin_view(self.test_send_view),
                name="campaigns_campaign_test_send",
            ),
        ]

    def _change_url(self, campaign: Any) -> str:
        return reverse("admin:campaigns_campaign_change", args=[campaign.pk])

    def schedule_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        campaign = self._campaign(request, object_id)
        if not self._may_manage(request):
            raise PermissionDenied
        zone = organization_zone(campaign.organization_id)
        initial = {
            # naive wall-clock time in `zone`: an aware value would be shown in the server's zone
            "scheduled_at": campaign.scheduled_at.astimezone(zone).replace(tzinfo=None)
            if campaign.scheduled_at
            else None,
            "use_recipient_timezone": campaign.use_recipient_timezone,
            "scheduled_hour": campaign.scheduled_hour,
            "scheduled_minute": campaign.scheduled_minute,
        }
        form = ScheduleForm(request.POST or None, initial=initial, zone_name=zone.key)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            outcome = services.campaign_schedule(
                campaign_id=campaign.pk,
                organization_id=campaign.organization_id,
                actor=self.actor(request),
                authority=self._authority(request),
                scheduled_at=data["scheduled_at"],
                use_recipient_timezone=data.get("use_recipient_timezone", False),
                scheduled_hour=data.get("scheduled_hour"),
                scheduled_minute=data.get("scheduled_minute"),
            )
            if outcome.ok:
                when = local_time(data["scheduled_at"], campaign.organization_id)
                messages.success(request, f"Campaign scheduled for {when}.")
                return self._back(campaign)
            form.add_error(None, outcome.message or outcome.reason)
        intro = []
        if campaign.scheduled_at:
            intro.append(f"Now scheduled for {local_time(campaign.scheduled_at, campaign.organization_id)}.")
            window = recipient_time_window(campaign, start=campaign.scheduled_at)
            if window:
                intro.append(window)
        return form_page(
            self,
            request,
            campaign,
            title="Schedule the campaign" if campaign.status == "draft" else "Reschedule the campaign",
            form=form,
            submit="Schedule",
            back_url=self._change_url(campaign),
            intro=intro,
        )

    def test_send_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        from campaigns.sender import campaign_sender
        from campaigns.testsend import campaign_test_languages, campaign_test_send
        from owlat.models import Membership

        campaign = self._campaign(request, object_id)
        if not self._may_manage(request):
            raise PermissionDenied
        team = sorted(
            {
                e
                for e in Membership.objects.filter(organization_id=campaign.organization_id).values_list(
                    "user__email", flat=True
                )
                if e
            }
        )
        form = TestSendForm(
            request.POST or None,
            initial={"to": getattr(request.user, "email", "") or ""},
            ab_test=campaign.is_ab_test,
            team=team,
            languages=campaign_test_languages(campaign),
        )
        if request.method == "POST" and form.is_valid():
            try:
                sends = campaign_test_send(
                    campaign=campaign,
                    to=form.cleaned_data["to"],
                    variant=form.cleaned_data.get("variant") or None,
                    language=form.cleaned_data.get("language") or None,
                    authority=self._authority(request),
                )
            except services.CampaignError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                messages.success(request, f"Test queued to {', '.join(s.email for s in sends)}.")
                return self._back(campaign)
        sender = campaign_sender(campaign)
        return form_page(
            self,
            request,
            campaign,
            title="Send a test of the campaign",
            form=form,
            submit="Send test",
            back_url=self._change_url(campaign),
            intro=[
                f"From {sender.name} <{sender.email}>" if sender.name else f"From {sender.email or '—'}",
                f"Subject: [Test] {subject_preview(campaign)}",
            ],
            datalists={"test-send-team": team},
        )
