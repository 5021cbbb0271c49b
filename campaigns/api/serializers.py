"""Wire format of campaigns (API-29 … API-31): DRF serializers with declared camelCase fields.

The request serializers check the shape of a body or query; what an audience, a template or an A/B config
means is checked by `campaigns.services` / `campaigns.abtest` (shared with the admin), whose refusals name
the field too.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns import abtest
from campaigns.archive import archive_public_url
from campaigns.models import Campaign, CampaignStatus
from delivery.api.serializers import SendProgressSerializer
from delivery.models import SendStatus
from owlat.api.fields import (
    ChoiceListField,
    InputSerializer,
    JSONValueField,
    QuerySerializer,
    StringField,
    TimestampField,
    check_json_value,
)
from owlat.api.serializers import EmailAddressField

READ_ONLY_KEYS = (
    "id",
    "status",
    "sentAt",
    "cancelledAt",
    "contentBlockReason",
    "archiveUrl",
    "abTest",
    "stats",
    "statsUpdatedAt",
    "createdAt",
    "updatedAt",
    "scheduledAt",
    "useRecipientTimezone",
    "scheduledHour",
    "scheduledMinute",
)
AB_TEST_TYPES = ("subject", "content")
AB_WINNER_CRITERIA = ("open_rate", "click_rate", "manual")


# --- requests ------------------------------------------------------------------------------------------------


@extend_schema_field(
    {
        "type": "object",
        "oneOf": [
            {
                "type": "object",
                "required": ["kind", "topicId"],
                "properties": {
                    "kind": {"type": "string", "enum": ["topic"]},
                    "topicId": {"type": "string", "format": "uuid"},
                },
            },
            {
                "type": "object",
                "required": ["kind", "segmentId"],
                "properties": {
                    "kind": {"type": "string", "enum": ["segment"]},
                    "segmentId": {"type": "string", "format": "uuid"},
                },
            },
        ],
        "description": 'Who receives it: `{"kind": "topic", "topicId"}` or `{"kind": "segment", "segmentId"}` '
        "(the segment's filters are frozen when the campaign is sent).",
    }
)
class AudienceField(JSONValueField):
    pass


class CampaignWriteSerializer(InputSerializer):
    """A campaign's editable fields. On update only the keys sent change."""

    read_only_keys = READ_ONLY_KEYS

    name = StringField(
        max_length=200,
        trim_whitespace=True,
        allow_blank=False,
        required=False,
        error_messages={"blank": "name is required"},
    )
    emailTemplateId = serializers.UUIDField(
        source="email_template_id", required=False, help_text="The email template to send."
    )
    subject = StringField(
        max_length=998,
        required=False,
        trim_whitespace=True,
        help_text="Defaults to the template's subject; may use variables.",
    )
    fromName = StringField(source="from_name", max_length=200, required=False, trim_whitespace=True)
    fromEmail = EmailAddressField(
        source="from_email",
        required=False,
        trim_whitespace=True,
        help_text="On a verified domain of the organization.",
    )
    replyTo = EmailAddressField(source="reply_to", required=False, trim_whitespace=True)
    audience = AudienceField(required=False)
    archiveEnabled = serializers.BooleanField(
        source="archive_enabled", required=False, help_text="Publish a web copy after sending."
    )


class CampaignCreateSerializer(CampaignWriteSerializer):
    """A new campaign (a draft)."""

    name = StringField(
        max_length=200,
        trim_whitespace=True,
        allow_blank=False,
        error_messages={
            "required": "name is required",
            "blank": "name is required",
            "type": "name is required",
        },
    )


class ScheduleSerializer(InputSerializer):
    scheduledAt = TimestampField(
        source="scheduled_at",
        error_messages={"required": "scheduledAt is required"},
        help_text="When to send (ISO 8601; without an offset, UTC). Must be in the future.",
    )
    useRecipientTimezone = serializers.BooleanField(
        source="use_recipient_timezone",
        required=False,
        default=False,
        help_text="Send at `scheduledHour:scheduledMinute` in each recipient's own time zone.",
    )
    scheduledHour = serializers.IntegerField(
        source="scheduled_hour", required=False, min_value=0, max_value=23
    )
    scheduledMinute = serializers.IntegerField(
        source="scheduled_minute", required=False, min_value=0, max_value=59
    )


class AbTestConfigSerializer(InputSerializer):
    """An A/B test: variant B differs in subject or content; each variant gets `splitPercentage` of the
    audience, the rest gets the winner."""

    # The fields document the body; `campaigns.abtest.ab_config_clean` (shared with the admin) checks it as
    # a whole, in CMP-15's order and words (400 naming the field).

    testType = serializers.ChoiceField(choices=AB_TEST_TYPES, help_text="What variant B changes.")
    variantBSubject = serializers.CharField(required=False, help_text="Required for subject tests.")
    variantBTemplateId = serializers.UUIDField(required=False, help_text="Required for content tests.")
    splitPercentage = serializers.FloatField(
        min_value=abtest.SPLIT_MIN, max_value=abtest.SPLIT_MAX, help_text="Share of the audience per variant."
    )
    winnerCriteria = serializers.ChoiceField(
        choices=AB_WINNER_CRITERIA, help_text="How the winner is chosen."
    )
    testDuration = serializers.FloatField(
        required=False,
        min_value=0,
        help_text="Hours of testing before the winner is chosen: required (more than 0) unless winnerCriteria "
        "is manual, ignored for manual.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("The A/B test config must be an object")
        for key, value in data.items():
            check_json_value(value, key)
        try:
            return abtest.ab_config_clean(self.context["organization_id"], data)
        except abtest.AbConfigError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]} if exc.field else exc.message)


class DeclareWinnerSerializer(InputSerializer):
    winner = serializers.ChoiceField(choices=["A", "B"], help_text="The variant that wins.")


class CampaignListQuerySerializer(QuerySerializer):
    status = ChoiceListField(
        choices=CampaignStatus.values, required=False, help_text="Comma-separated campaign statuses."
    )
    search = StringField(required=False, trim_whitespace=True, help_text="Part of the name.")


class SendListQuerySerializer(QuerySerializer):
    status = ChoiceListField(
        choices=SendStatus.values, required=False, help_text="Comma-separated send statuses."
    )
    variant = serializers.ChoiceField(
        choices=["A", "B"],
        required=False,
        error_messages={"invalid_choice": "Invalid variant: {input}"},
        help_text="Only the rows of this A/B variant.",
    )
    search = StringField(required=False, trim_whitespace=True, help_text="Part of the email address.")


class PreflightQuerySerializer(QuerySerializer):
    scheduledAt = TimestampField(required=False, help_text="Check as if scheduled for this time.")


# --- responses -----------------------------------------------------------------------------------------------


class CampaignCountersSerializer(serializers.Serializer):
    """The campaign's counters."""

    sent = serializers.IntegerField(source="stats_sent")
    failed = serializers.IntegerField(source="stats_failed")
    delivered = serializers.IntegerField(source="stats_delivered")
    opened = serializers.IntegerField(source="stats_opened")
    clicked = serializers.IntegerField(source="stats_clicked")
    bounced = serializers.IntegerField(source="stats_bounced")
    hardBounced = serializers.IntegerField(source="stats_hard_bounced")
    softBounced = serializers.IntegerField(source="stats_soft_bounced")
    unsubscribed = serializers.IntegerField(source="stats_unsubscribed")


class AbTestSerializer(serializers.Serializer):
    """The campaign's A/B test."""

    status = serializers.CharField(
        source="ab_test_status", allow_null=True, help_text="pending, testing, winner_selected …"
    )
    winner = serializers.CharField(source="ab_winner", allow_null=True)
    winnerSelectedAt = TimestampField(source="ab_winner_selected_at", allow_null=True)
    testType = serializers.SerializerMethodField()
    variantBSubject = serializers.SerializerMethodField()
    variantBTemplateId = serializers.SerializerMethodField()
    splitPercentage = serializers.SerializerMethodField()
    winnerCriteria = serializers.SerializerMethodField()
    testDuration = serializers.SerializerMethodField()

    def get_testType(self, campaign: Campaign) -> str | None:
        return campaign.ab_config().get("testType")

    def get_variantBSubject(self, campaign: Campaign) -> str | None:
        return campaign.ab_config().get("variantBSubject")

    def get_variantBTemplateId(self, campaign: Campaign) -> str | None:
        return campaign.ab_config().get("variantBTemplateId")

    def get_splitPercentage(self, campaign: Campaign) -> float | None:
        return campaign.ab_config().get("splitPercentage")

    def get_winnerCriteria(self, campaign: Campaign) -> str | None:
        return campaign.ab_config().get("winnerCriteria")

    def get_testDuration(self, campaign: Campaign) -> int | None:
        return campaign.ab_config().get("testDuration")


class CampaignSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=CampaignStatus.choices)
    emailTemplateId = serializers.CharField(source="email_template_id", allow_null=True)
    subject = serializers.CharField(allow_null=True)
    fromName = serializers.CharField(source="from_name", allow_null=True)
    fromEmail = serializers.CharField(source="from_email", allow_null=True)
    replyTo = serializers.CharField(source="reply_to", allow_null=True)
    audience = AudienceField(allow_null=True)
    scheduledAt = TimestampField(source="scheduled_at", allow_null=True)
    useRecipientTimezone = serializers.BooleanField(source="use_recipient_timezone")
    scheduledHour = serializers.IntegerField(source="scheduled_hour", allow_null=True)
    scheduledMinute = serializers.IntegerField(source="scheduled_minute", allow_null=True)
    sentAt = TimestampField(source="sent_at", allow_null=True)
    cancelledAt = TimestampField(source="cancelled_at", allow_null=True)
    contentBlockReason = serializers.CharField(source="content_block_reason", allow_null=True)
    archiveEnabled = serializers.BooleanField(source="archive_enabled", allow_null=True)
    archiveUrl = serializers.SerializerMethodField(help_text="The public web copy, once sent with archiving.")
    abTest = serializers.SerializerMethodField()
    stats = CampaignCountersSerializer(source="*")
    statsUpdatedAt = TimestampField(source="stats_updated_at", allow_null=True)
    createdAt = TimestampField(source="created_at")
    updatedAt = TimestampField(source="updated_at")

    def get_archiveUrl(self, campaign: Campaign) -> str | None:
        return archive_public_url(campaign)

    @extend_schema_field(AbTestSerializer(allow_null=True))
    def get_abTest(self, campaign: Campaign) -> dict[str, Any] | None:
        return AbTestSerializer(campaign).data if campaign.is_ab_test else None


class VariantStatsSerializer(serializers.Serializer):
    sent = serializers.IntegerField()
    delivered = serializers.IntegerField()
    opened = serializers.IntegerField()
    clicked = serializers.IntegerField()
    openRate = serializers.FloatField()
    clickRate = serializers.FloatField()


class VariantsSerializer(serializers.Serializer):
    A = VariantStatsSerializer()
    B = VariantStatsSerializer()


class CampaignStatsSerializer(serializers.Serializer):
    """Ever-reached counts: a clicked message counts as delivered and opened. Rates are percentages."""

    source = serializers.ChoiceField(
        choices=["rows", "counters"], help_text="`rows` up to 10 000 messages, `counters` above."
    )
    sent = serializers.IntegerField()
    failed = serializers.IntegerField()
    delivered = serializers.IntegerField()
    opened = serializers.IntegerField()
    clicked = serializers.IntegerField()
    bounced = serializers.IntegerField()
    hardBounced = serializers.IntegerField()
    softBounced = serializers.IntegerField()
    unsubscribed = serializers.IntegerField()
    queued = serializers.IntegerField(help_text="Waiting to be sent (a paused campaign's rows wait here).")
    cancelled = serializers.IntegerField(
        help_text="Never sent: the campaign was cancelled before they went out."
    )
    deliveryRate = serializers.FloatField(help_text="Delivered over sent.")
    openRate = serializers.FloatField(
        allow_null=True,
        help_text="Opened over the messages sent with an open pixel (`openRateBase`); null when no message "
        "carried the pixel (opens not measured).",
    )
    openRateBase = serializers.IntegerField(help_text="The open rate's denominator.")
    clickRate = serializers.FloatField(help_text="Clicked over delivered.")
    bounceRate = serializers.FloatField(help_text="Bounced over sent.")
    statsUpdatedAt = TimestampField(allow_null=True)
    variants = VariantsSerializer(allow_null=True, help_text="Per variant, for A/B tests.")


def _rate(part: int, whole: int) -> float:
    return round(part / whole * 100, 2) if whole else 0.0


def _open_rate(stats: dict[str, Any]) -> dict[str, Any]:
    from delivery.services import open_rate_basis

    basis = open_rate_basis(stats)
    if basis is None:
        return {"openRate": None, "openRateBase": 0}
    opened, whole, _ = basis
    return {"openRate": _rate(opened, whole), "openRateBase": whole}


def campaign_stats(campaign: Campaign) -> dict[str, Any]:
    """API-31's figures (DLV-09 ever-reached) for `CampaignStatsSerializer`."""
    from delivery.services import campaign_send_stats

    s = campaign_send_stats(campaign.pk)
    data = {
        "source": s.get("source", "rows"),
        **{key: s[name] for key, name in STAT_KEYS.items()},
        "deliveryRate": _rate(s["delivered"], s["sent"]),
        **_open_rate(s),
        "clickRate": _rate(s["clicked"], s["delivered"]),
        "bounceRate": _rate(s["bounced"], s["sent"]),
        "statsUpdatedAt": campaign.stats_updated_at,
        "variants": None,
    }
    if campaign.is_ab_test:
        data["variants"] = {v: abtest.variant_stats(campaign.pk, v) for v in ("A", "B")}
    return data


STAT_KEYS = {
    "sent": "sent",
    "failed": "failed",
    "delivered": "delivered",
    "opened": "opened",
    "clicked": "clicked",
    "bounced": "bounced",
    "hardBounced": "hard_bounced",
    "softBounced": "soft_bounced",
    "unsubscribed": "unsubscribed",
    "queued": "queued",
    "cancelled": "cancelled",
}


class PreflightSerializer(serializers.Serializer):
    """Whether the campaign could be sent now (or at `scheduledAt`)."""

    ready = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="Why not, e.g. `domain_not_verified`.")
    message = serializers.CharField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="Problems that do not block.")


class ClickedLinkSerializer(serializers.Serializer):
    url = serializers.CharField()
    clickedAt = serializers.CharField()


@extend_schema_field(ClickedLinkSerializer(many=True))
class ClickedLinksField(JSONValueField):
    pass


class CampaignSendSerializer(SendProgressSerializer):
    """One recipient's message of a campaign."""

    id = serializers.CharField()
    contactId = serializers.CharField(source="contact_id", allow_null=True)
    email = serializers.CharField(source="contact_email")
    status = serializers.ChoiceField(choices=SendStatus.choices)
    abVariant = serializers.CharField(source="ab_variant", allow_null=True)
    personalizedSubject = serializers.CharField(source="personalized_subject", allow_null=True)
    queuedAt = TimestampField(source="queued_at")
    unsubscribedAt = TimestampField(source="unsubscribed_at", allow_null=True)
    openCount = serializers.IntegerField(source="open_count")
    clickedLinks = ClickedLinksField(source="clicked_links")
    providerMessageId = serializers.CharField(source="provider_message_id", allow_null=True)


class TestSendSerializer(InputSerializer):
    """A campaign test send: who receives it, and which variant and language."""

    to = serializers.ListField(
        child=EmailAddressField(),
        min_length=1,
        max_length=5,
        error_messages={"required": "to is required"},
        help_text="1 to 5 email addresses. Each receives the campaign as it would go, marked as a test.",
    )
    variant = serializers.ChoiceField(
        choices=["A", "B"], required=False, help_text="For an A/B test, the variant to send (default A)."
    )
    language = StringField(
        required=False,
        max_length=35,
        help_text="The template language to send (default: the template's default language).",
    )


class TestSendResultSerializer(serializers.Serializer):
    """The queued test messages."""

    recipients = serializers.ListField(child=serializers.CharField(), help_text="The addresses queued.")
    fromEmail = serializers.CharField(help_text="The sender the test (and the campaign) goes out from.")
    fromName = serializers.CharField(allow_blank=True)
