"""Wire format of campaigns (API-29 … API-31): DRF serializers with declared camelCase fields."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from campaigns.archive import archive_public_url
from campaigns.models import Campaign

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


class IsoDateTimeField(serializers.DateTimeField):
    """API-05: ISO 8601 UTC with milliseconds and `Z`."""

    def to_representation(self, value):
        from owlat.api.base import iso

        return iso(value)


class StatsSerializer(serializers.Serializer):
    sent = serializers.IntegerField(source="stats_sent")
    failed = serializers.IntegerField(source="stats_failed")
    delivered = serializers.IntegerField(source="stats_delivered")
    opened = serializers.IntegerField(source="stats_opened")
    clicked = serializers.IntegerField(source="stats_clicked")
    bounced = serializers.IntegerField(source="stats_bounced")
    hardBounced = serializers.IntegerField(source="stats_hard_bounced")
    softBounced = serializers.IntegerField(source="stats_soft_bounced")
    unsubscribed = serializers.IntegerField(source="stats_unsubscribed")


class CampaignOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    emailTemplateId = serializers.CharField(source="email_template_id", allow_null=True)
    subject = serializers.CharField(allow_null=True)
    fromName = serializers.CharField(source="from_name", allow_null=True)
    fromEmail = serializers.CharField(source="from_email", allow_null=True)
    replyTo = serializers.CharField(source="reply_to", allow_null=True)
    audience = serializers.JSONField(allow_null=True)
    scheduledAt = IsoDateTimeField(source="scheduled_at", allow_null=True)
    useRecipientTimezone = serializers.BooleanField(source="use_recipient_timezone")
    scheduledHour = serializers.IntegerField(source="scheduled_hour", allow_null=True)
    scheduledMinute = serializers.IntegerField(source="scheduled_minute", allow_null=True)
    sentAt = IsoDateTimeField(source="sent_at", allow_null=True)
    cancelledAt = IsoDateTimeField(source="cancelled_at", allow_null=True)
    contentBlockReason = serializers.CharField(source="content_block_reason", allow_null=True)
    archiveEnabled = serializers.BooleanField(source="archive_enabled", allow_null=True)
    archiveUrl = serializers.SerializerMethodField()
    abTest = serializers.SerializerMethodField()
    stats = serializers.SerializerMethodField()
    statsUpdatedAt = IsoDateTimeField(source="stats_updated_at", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")

    def to_representation(self, instance: Campaign) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["id"] = str(instance.pk)
        data["emailTemplateId"] = str(instance.email_template_id) if instance.email_template_id else None
        return data

    def get_archiveUrl(self, obj: Campaign) -> str | None:
        return archive_public_url(obj)

    def get_abTest(self, obj: Campaign) -> dict[str, Any] | None:
        if not obj.is_ab_test:
            return None
        from owlat.api.base import iso

        cfg = obj.ab_config()
        return {
            "status": obj.ab_test_status,
            "winner": obj.ab_winner,
            "winnerSelectedAt": iso(obj.ab_winner_selected_at),
            "testType": cfg.get("testType"),
            "variantBSubject": cfg.get("variantBSubject"),
            "variantBTemplateId": cfg.get("variantBTemplateId"),
            "splitPercentage": cfg.get("splitPercentage"),
            "winnerCriteria": cfg.get("winnerCriteria"),
            "testDuration": cfg.get("testDuration"),
        }

    def get_stats(self, obj: Campaign) -> dict[str, int]:
        return dict(StatsSerializer(obj).data)


class CampaignInputSerializer(serializers.Serializer):
    """Create/update body; `null` means absent (API-05), unknown keys are ignored."""

    name = serializers.CharField(max_length=200, required=False)
    emailTemplateId = serializers.UUIDField(source="email_template_id", required=False)
    subject = serializers.CharField(max_length=998, required=False, allow_blank=True)
    fromName = serializers.CharField(source="from_name", max_length=200, required=False, allow_blank=True)
    fromEmail = serializers.EmailField(source="from_email", required=False)
    replyTo = serializers.EmailField(source="reply_to", required=False)
    audience = serializers.JSONField(required=False)
    archiveEnabled = serializers.BooleanField(source="archive_enabled", required=False)


class ScheduleInputSerializer(serializers.Serializer):
    scheduledAt = serializers.DateTimeField(source="scheduled_at")
    useRecipientTimezone = serializers.BooleanField(
        source="use_recipient_timezone", required=False, default=False
    )
    scheduledHour = serializers.IntegerField(
        source="scheduled_hour", required=False, min_value=0, max_value=23
    )
    scheduledMinute = serializers.IntegerField(
        source="scheduled_minute", required=False, min_value=0, max_value=59
    )


class DeclareWinnerInputSerializer(serializers.Serializer):
    winner = serializers.ChoiceField(choices=["A", "B"])


class SendRowOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    contactId = serializers.SerializerMethodField()
    email = serializers.CharField(source="contact_email")
    status = serializers.CharField()
    abVariant = serializers.CharField(source="ab_variant", allow_null=True)
    personalizedSubject = serializers.CharField(source="personalized_subject", allow_null=True)
    queuedAt = IsoDateTimeField(source="queued_at")
    sentAt = IsoDateTimeField(source="sent_at", allow_null=True)
    deliveredAt = IsoDateTimeField(source="delivered_at", allow_null=True)
    openedAt = IsoDateTimeField(source="opened_at", allow_null=True)
    clickedAt = IsoDateTimeField(source="clicked_at", allow_null=True)
    bouncedAt = IsoDateTimeField(source="bounced_at", allow_null=True)
    bounceType = serializers.CharField(source="bounce_type", allow_null=True)
    complainedAt = IsoDateTimeField(source="complained_at", allow_null=True)
    failedAt = IsoDateTimeField(source="failed_at", allow_null=True)
    unsubscribedAt = IsoDateTimeField(source="unsubscribed_at", allow_null=True)
    openCount = serializers.IntegerField(source="open_count")
    clickedLinks = serializers.JSONField(source="clicked_links")
    errorCode = serializers.CharField(source="error_code", allow_null=True)
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    providerMessageId = serializers.CharField(source="provider_message_id", allow_null=True)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["id"] = str(instance.pk)
        return data

    def get_contactId(self, obj) -> str | None:
        return str(obj.contact_id) if obj.contact_id else None


def campaign_data(campaign: Campaign) -> dict[str, Any]:
    return dict(CampaignOutputSerializer(campaign).data)


def _rate(part: int, whole: int) -> float:
    return round(part / whole * 100, 2) if whole else 0.0


def stats_data(campaign: Campaign) -> dict[str, Any]:
    """API-31: ever-reached semantics (DLV-09); `source` rows (≤ 10 000) or counters."""
    from campaigns.abtest import variant_stats
    from delivery.services import campaign_send_stats
    from owlat.api.base import iso

    s = campaign_send_stats(campaign.pk)
    source = s.get("source", "rows")
    data = {
        "source": source,
        "sent": s["sent"],
        "failed": s["failed"],
        "delivered": s["delivered"],
        "opened": s["opened"],
        "clicked": s["clicked"],
        "bounced": s["bounced"],
        "hardBounced": s["hard_bounced"],
        "softBounced": s["soft_bounced"],
        "unsubscribed": s["unsubscribed"],
        "deliveryRate": _rate(s["delivered"], s["sent"]),
        "openRate": _rate(s["opened"], s["delivered"]),
        "clickRate": _rate(s["clicked"], s["delivered"]),
        "bounceRate": _rate(s["bounced"], s["sent"]),
        "statsUpdatedAt": iso(campaign.stats_updated_at),
        "variants": None,
    }
    if campaign.is_ab_test:
        keys = ("sent", "delivered", "opened", "clicked", "openRate", "clickRate")
        per = {v: variant_stats(campaign.pk, v) for v in ("A", "B")}
        data["variants"] = {v: {k: per[v][k] for k in keys} for v in ("A", "B")}
    return data
