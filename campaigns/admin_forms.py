"""Admin forms of campaigns: operators pick and type values, never JSON. Each form cleans into the fields and
JSON the model stores (audience, A/B config)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils import timezone
from unfold.widgets import UnfoldAdminTextareaWidget

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


def _zone_choices() -> list[tuple[str, str]]:
    import zoneinfo

    return [(z, z.replace("_", " ")) for z in sorted(zoneinfo.available_timezones())]


def _datetime_local_widget() -> forms.Widget:
    from unfold.widgets import UnfoldAdminTextInputWidget

    class DateTimeLocalInput(UnfoldAdminTextInputWidget):
        """The browser's date-time picker; its value is wall-clock time without a zone (`2026-12-04T09:00`)."""

        input_type = "datetime-local"
        format_key = ""

        def format_value(self, value: Any) -> str | None:
            if hasattr(value, "strftime"):
                return value.strftime("%Y-%m-%dT%H:%M")
            return super().format_value(value)

    return DateTimeLocalInput()


class ScheduleForm(forms.Form):
    """When to send, on the clock of a chosen time zone (the organization's by default), or at each recipient's
    local time. A wall-clock value is read in `time_zone`; an ISO value with an offset keeps its offset."""

    scheduled_at = forms.DateTimeField(
        label="Send at",
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"],
        error_messages={"invalid": "Enter a date and time, e.g. 2026-12-04 09:00."},
    )
    time_zone = forms.ChoiceField(label="Time zone", choices=(), required=False)
    use_recipient_timezone = forms.BooleanField(required=False, label="Send at each recipient's local time")
    scheduled_hour = forms.IntegerField(required=False, min_value=0, max_value=23, label="Local hour (0–23)")
    scheduled_minute = forms.IntegerField(required=False, min_value=0, max_value=59, label="Local minute")

    def __init__(self, *args: Any, zone_name: str, **kwargs: Any) -> None:
        from unfold.widgets import UnfoldAdminIntegerFieldWidget, UnfoldAdminSelectWidget, UnfoldBooleanWidget

        super().__init__(*args, **kwargs)
        self.zone_name = zone_name
        fields = self.fields
        fields["scheduled_at"].widget = _datetime_local_widget()
        fields["scheduled_at"].label = f"Send at ({zone_name})"
        fields["scheduled_at"].help_text = (
            f"Pick the date and time on the clock of the time zone below (the organization's, {zone_name}, "
            "unless you change it); typed values are read as YYYY-MM-DD HH:MM. It is shown back in that zone."
        )
        fields["time_zone"].choices = _zone_choices()
        fields["time_zone"].widget = UnfoldAdminSelectWidget(choices=fields["time_zone"].choices)
        fields["time_zone"].initial = zone_name
        fields["time_zone"].help_text = "The organization's time zone is set in Settings."
        fields["use_recipient_timezone"].widget = UnfoldBooleanWidget()
        fields["use_recipient_timezone"].help_text = (
            "Each recipient gets it at the local hour and minute below on their own clock (their contact time "
            "zone, else the organization's). Sending starts at the time above and then spans up to about 26 "
            "hours: the earliest zones (UTC+14) get it first, the latest (UTC−12) a day later."
        )
        for name in ("scheduled_hour", "scheduled_minute"):
            fields[name].widget = UnfoldAdminIntegerFieldWidget()

    def clean(self) -> dict[str, Any]:
        import zoneinfo

        cleaned = super().clean()
        if cleaned.get("use_recipient_timezone") and (
            cleaned.get("scheduled_hour") is None or cleaned.get("scheduled_minute") is None
        ):
            self.add_error("scheduled_hour", "Give the hour and minute recipients should receive it.")
        at = cleaned.get("scheduled_at")
        if at is not None:
            zone = zoneinfo.ZoneInfo(cleaned.get("time_zone") or self.zone_name)
            raw = str(self.data.get(self.add_prefix("scheduled_at"), ""))
            if timezone.is_naive(at):
                cleaned["scheduled_at"] = at.replace(tzinfo=zone)
            elif not _has_offset(raw):
                # USE_TZ made the typed wall-clock value aware in the server's zone: read it in `zone` instead
                cleaned["scheduled_at"] = timezone.make_naive(at).replace(tzinfo=zone)
        return cleaned


def _has_offset(raw: str) -> bool:
    import re

    return bool(re.search(r"(Z|[+-]\d{2}:?\d{2})$", raw.strip()))


class TestSendForm(forms.Form):
    """Who receives a test of the campaign (the operator by default), and which variant."""

    to = forms.CharField(
        label="Send to",
        max_length=5 * 255,
        help_text="Up to 5 addresses, separated by commas. The test is the campaign as it would go (subject "
        "marked [Test], its sender, template and footer), is not tracked and is in no contact's history.",
    )
    variant = forms.ChoiceField(
        label="Variant", choices=[("A", "A"), ("B", "B")], required=False, initial="A"
    )
    language = forms.ChoiceField(
        label="Language",
        choices=(),
        required=False,
        help_text="The template's content and subject in this language, as a contact with this language gets it.",
    )

    def __init__(
        self, *args: Any, ab_test: bool, team: list[str], languages: list[str] | None = None, **kwargs: Any
    ) -> None:
        from unfold.widgets import UnfoldAdminSelectWidget, UnfoldAdminTextInputWidget

        super().__init__(*args, **kwargs)
        self.fields["to"].widget = UnfoldAdminTextInputWidget(attrs={"list": "test-send-team"})
        self.team = team
        languages = languages or []
        if languages:
            choices = [(lang, f"{lang} (default)" if i == 0 else lang) for i, lang in enumerate(languages)]
            self.fields["language"].choices = choices
            self.fields["language"].initial = languages[0]
            self.fields["language"].widget = UnfoldAdminSelectWidget(choices=choices)
        else:
            del self.fields["language"]
        if ab_test:
            self.fields["variant"].widget = UnfoldAdminSelectWidget(choices=self.fields["variant"].choices)
        else:
            del self.fields["variant"]

    def clean_to(self) -> list[str]:
        from campaigns.services import CampaignError
        from campaigns.testsend import recipients_clean

        try:
            return recipients_clean(self.cleaned_data["to"].replace(";", ",").split(","))
        except CampaignError as exc:
            raise forms.ValidationError(exc.message) from exc


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=UnfoldAdminTextareaWidget(attrs={"rows": 3}),
        label="Reason (shown to the organization)",
        help_text="The campaign goes back to draft; its owners read this reason on the campaign page.",
    )
