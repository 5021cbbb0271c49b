"""Admin forms of campaigns: operators pick and type values, never JSON. Each form cleans into the fields and
JSON the model stores (audience, A/B config)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.template.response import TemplateResponse
from django.utils import timezone

from campaigns.models import Campaign

AUDIENCE_KINDS = [("", "— none —"), ("topic", "Topic"), ("segment", "Segment")]


class CampaignForm(forms.ModelForm):
    """The campaign editor: basics, template, sender, audience picker and A/B settings."""

    audience_kind = forms.ChoiceField(choices=AUDIENCE_KINDS, required=False, label="Audience")
    audience_topic = forms.ModelChoiceField(queryset=None, required=False, label="Topic")
    audience_segment = forms.ModelChoiceField(queryset=None, required=False, label="Segment")
    sender = forms.ChoiceField(required=False, label="Sender", help_text="An enabled campaign sender.")
    ab_enabled = forms.BooleanField(required=False, label="A/B test")
    ab_test_type = forms.ChoiceField(
        choices=[("subject", "Subject"), ("content", "Content")], required=False, label="Test type"
    )
    ab_variant_b_subject = forms.CharField(required=False, label="Variant B subject", max_length=998)
    ab_variant_b_template = forms.ModelChoiceField(queryset=None, required=False, label="Variant B template")
    ab_split_percentage = forms.IntegerField(
        required=False, min_value=10, max_value=50, initial=20, label="Split % per variant"
    )
    ab_winner_criteria = forms.ChoiceField(
        choices=[("open_rate", "Open rate"), ("click_rate", "Click rate"), ("manual", "Manual")],
        required=False,
        label="Winner criteria",
    )
    ab_test_duration = forms.IntegerField(
        required=False,
        min_value=1,
        label="Test duration (hours)",
        help_text="Required unless the winner is chosen manually: after this many hours of testing the better "
        "variant is chosen and sent to everyone else.",
    )

    class Meta:
        model = Campaign
        fields = (
            "name",
            "email_template",
            "subject",
            "from_name",
            "from_email",
            "reply_to",
            "archive_enabled",
        )

    def setup_organization(self, organization_id: Any) -> None:
        """Pickers of the organization the form writes to (called by the admin after construction)."""
        from owlat.models import CampaignSender, Segment, Topic
        from owlat.organizations import organization_settings
        from templates.models import EmailTemplate

        instance: Campaign | None = self.instance
        org_id = organization_id or (
            instance.organization_id if instance and instance.organization_id else None
        )
        self.organization_id = org_id
        topics = Topic.objects.filter(organization_id=org_id) if org_id else Topic.objects.none()
        segments = Segment.objects.filter(organization_id=org_id) if org_id else Segment.objects.none()
        templates = (
            EmailTemplate.objects.filter(organization_id=org_id) if org_id else EmailTemplate.objects.none()
        )
        self.fields["audience_topic"].queryset = topics
        self.fields["audience_segment"].queryset = segments
        self.fields["ab_variant_b_template"].queryset = templates
        if "email_template" in self.fields:
            self.fields["email_template"].queryset = templates
        senders: list[tuple[str, str]] = [("", "— the organization's default, or type an address below —")]
        if org_id:
            s = organization_settings(org_id)
            if s.default_from_email:
                senders.append(
                    (s.default_from_email, f"{s.default_from_name or ''} <{s.default_from_email}>")
                )
                self.fields["sender"].help_text = (
                    f"An enabled campaign sender. With none chosen and no address typed below, the campaign "
                    f"goes out from the organization's default sender, {s.default_from_name or ''} "
                    f"<{s.default_from_email}>."
                )
            for sender in CampaignSender.objects.filter(organization_id=org_id, is_enabled=True):
                senders.append((sender.email, f"{sender.display_name or ''} <{sender.email}>"))
        self.fields["sender"].choices = senders
        if instance is not None and instance.pk and not self.is_bound:
            chosen = (instance.from_email or "").lower()
            self.initial["sender"] = next((v for v, _ in senders if v and v.lower() == chosen), "")
        if instance is not None and instance.pk and not self.is_bound:
            audience = instance.audience or {}
            self.initial["audience_kind"] = audience.get("kind", "")
            self.initial["audience_topic"] = audience.get("topicId")
            self.initial["audience_segment"] = audience.get("segmentId")
            cfg = instance.ab_config()
            self.initial.update(
                ab_enabled=instance.is_ab_test,
                ab_test_type=cfg.get("testType", "subject"),
                ab_variant_b_subject=cfg.get("variantBSubject", ""),
                ab_variant_b_template=cfg.get("variantBTemplateId"),
                ab_split_percentage=cfg.get("splitPercentage", 20),
                ab_winner_criteria=cfg.get("winnerCriteria", "open_rate"),
                ab_test_duration=cfg.get("testDuration"),
            )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        kind = cleaned.get("audience_kind")
        if kind == "topic":
            if not cleaned.get("audience_topic"):
                self.add_error("audience_topic", "Choose a topic.")
            else:
                cleaned["audience"] = {"kind": "topic", "topicId": str(cleaned["audience_topic"].pk)}
        elif kind == "segment":
            if not cleaned.get("audience_segment"):
                self.add_error("audience_segment", "Choose a segment.")
            else:
                cleaned["audience"] = {"kind": "segment", "segmentId": str(cleaned["audience_segment"].pk)}
        else:
            cleaned["audience"] = None
        if cleaned.get("sender"):
            cleaned["from_email"] = cleaned["sender"]
        if cleaned.get("ab_enabled"):
            from campaigns.abtest import AbConfigError, ab_config_clean

            raw = {
                "testType": cleaned.get("ab_test_type"),
                "variantBSubject": cleaned.get("ab_variant_b_subject"),
                "variantBTemplateId": str(cleaned["ab_variant_b_template"].pk)
                if cleaned.get("ab_variant_b_template")
                else None,
                "splitPercentage": cleaned.get("ab_split_percentage"),
                "winnerCriteria": cleaned.get("ab_winner_criteria"),
                "testDuration": cleaned.get("ab_test_duration"),
            }
            field_map = {
                "variantBSubject": "ab_variant_b_subject",
                "variantBTemplateId": "ab_variant_b_template",
                "splitPercentage": "ab_split_percentage",
                "testType": "ab_test_type",
                "winnerCriteria": "ab_winner_criteria",
                "testDuration": "ab_test_duration",
            }
            try:
                cleaned["ab_config"] = ab_config_clean(self.organization_id, raw)
            except AbConfigError as exc:
                self.add_error(field_map.get(exc.field), exc.message)
        return cleaned

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "name": data.get("name"),
            "email_template_id": data["email_template"].pk if data.get("email_template") else None,
            "subject": data.get("subject") or None,
            "from_name": data.get("from_name") or None,
            "from_email": data.get("from_email") or None,
            "reply_to": data.get("reply_to") or None,
            "audience": data.get("audience"),
            "archive_enabled": data.get("archive_enabled"),
        }


class ScheduleForm(forms.Form):
    scheduled_at = forms.DateTimeField(
        label="Send at", help_text="In the server's time zone (UTC) unless recipient time is used."
    )
    use_recipient_timezone = forms.BooleanField(required=False, label="Send at the recipient's local time")
    scheduled_hour = forms.IntegerField(required=False, min_value=0, max_value=23, label="Hour (0–23)")
    scheduled_minute = forms.IntegerField(required=False, min_value=0, max_value=59, label="Minute")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("use_recipient_timezone") and (
            cleaned.get("scheduled_hour") is None or cleaned.get("scheduled_minute") is None
        ):
            self.add_error("scheduled_hour", "Give the hour and minute recipients should receive it.")
        at = cleaned.get("scheduled_at")
        if at is not None and timezone.is_naive(at):
            cleaned["scheduled_at"] = timezone.make_aware(at, timezone.get_current_timezone())
        return cleaned


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), label="Reason (shown to the organization)"
    )


def form_page(
    model_admin: Any, request: Any, title: str, form: forms.Form, campaign: Campaign
) -> TemplateResponse:
    """An admin page with one form about `campaign` (schedule, reject) in the admin's own frame."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "form": form,
        "campaign": campaign,
        "opts": model_admin.model._meta,
    }
    return TemplateResponse(request, "admin/campaigns/campaign/schedule.html", context)
