"""One definition of a campaign's result buckets (DLV-09, CMP-20): the stats backfill, delivery's stats and the
A/B variant results all count through `delivery.services.send_buckets`, so they cannot drift apart."""

from __future__ import annotations

from django.utils import timezone

from campaigns.abtest import variant_stats
from campaigns.models import STATS_FIELDS
from campaigns.operations import _row_counts
from delivery.models import EmailSend
from delivery.services import campaign_send_stats, send_buckets

from .test_orchestrator import send_and_drain


def test_backfill_stats_and_variants_count_the_same_buckets(make_campaign, org, topic, make_contact):
    for _ in range(6):
        make_contact(topic=topic)
    campaign = make_campaign()
    send_and_drain(campaign, org)
    rows = list(EmailSend.objects.filter(campaign_id=campaign.pk).order_by("pk"))
    now = timezone.now()
    # engagement by timestamps (monotonic), whatever the status says
    EmailSend.objects.filter(pk=rows[0].pk).update(opened_at=now, ab_variant="A")
    EmailSend.objects.filter(pk=rows[1].pk).update(clicked_links=["https://example.org/post"], ab_variant="A")
    EmailSend.objects.filter(pk=rows[2].pk).update(bounced_at=now, bounce_type="hard", ab_variant="B")
    EmailSend.objects.filter(pk=rows[3].pk).update(bounced_at=now, bounce_type="soft", unsubscribed_at=now)
    EmailSend.objects.filter(pk=rows[4].pk).update(delivered_at=now, ab_variant="B")

    buckets = send_buckets(EmailSend.objects.filter(campaign_id=campaign.pk))
    assert (buckets["rows"], buckets["opened"], buckets["clicked"], buckets["bounced"]) == (6, 1, 1, 2)
    assert (buckets["hard_bounced"], buckets["soft_bounced"], buckets["unsubscribed"]) == (1, 1, 1)
    assert (
        buckets["delivered"] == 2
    )  # delivered_at or opened_at (or clicked_at); recorded links alone do not count

    stats = campaign_send_stats(campaign.pk)
    assert _row_counts(campaign.pk) == {f: stats[f.removeprefix("stats_")] for f in STATS_FIELDS}
    assert "rows" not in stats and stats["total"] == 6

    for variant in ("A", "B"):
        mine = send_buckets(EmailSend.objects.filter(campaign_id=campaign.pk, ab_variant=variant))
        result = variant_stats(campaign.pk, variant)
        assert (result["sent"], result["delivered"], result["opened"], result["clicked"]) == (
            mine["rows"],
            mine["delivered"],
            mine["opened"],
            mine["clicked"],
        )
