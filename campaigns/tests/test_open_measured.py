"""Opens are measured only where the message carried the open pixel: each send row records at hand-off whether
it did (`open_tracked`), the open rate counts only those rows and says its denominator, and a campaign whose
messages were all too short for the pixel reports its opens as not measured instead of 0 %."""

from __future__ import annotations

from django.utils import timezone

from campaigns.admin_panels import CampaignPanels
from campaigns.api.serializers import campaign_stats
from campaigns.services import campaign_send_now
from delivery.models import EmailSend
from owlat.permissions import Authority
from testsupport.queue import drain_queue

SYSTEM = Authority.system("test")
PIXEL = 'width="1" height="1"'


def _send(campaign, org, smtp_sink, count):
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(max_tasks=5000)
    messages = smtp_sink.wait_for(count)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    return messages


def _report(campaign) -> str:
    from django.core.cache import cache

    cache.clear()  # the change page's 30 s stats cache
    return str(CampaignPanels().report(campaign))


def test_a_campaign_sent_without_the_open_pixel_reports_its_opens_as_not_measured(
    make_campaign, org, topic, make_contact, smtp_sink
):
    make_contact(topic=topic, first_name="Ann")
    make_contact(topic=topic, first_name="Bob")
    campaign = make_campaign()
    messages = _send(campaign, org, smtp_sink, 2)
    assert all(PIXEL not in m.html() for m in messages)  # the short body is below the pixel's minimum text
    assert list(EmailSend.objects.filter(campaign_id=campaign.pk).values_list("open_tracked", flat=True)) == [
        False,
        False,
    ]
    assert "not measured" in _report(campaign)
    stats = campaign_stats(campaign)
    assert stats["openRate"] is None and stats["openRateBase"] == 0


def test_the_open_rate_counts_only_the_rows_sent_with_the_pixel_and_names_its_denominator(
    settings, make_campaign, org, topic, make_contact, smtp_sink
):
    settings.DELIVERY_OPEN_PIXEL_MIN_TEXT = 0  # the short test body gets the pixel too
    for name in ("Ann", "Bob", "Cem", "Dee"):
        make_contact(topic=topic, first_name=name)
    campaign = make_campaign()
    messages = _send(campaign, org, smtp_sink, 4)
    assert all(PIXEL in m.html() for m in messages)
    rows = EmailSend.objects.filter(campaign_id=campaign.pk).order_by("pk")
    assert set(rows.values_list("open_tracked", flat=True)) == {True}
    first, second, third, _ = rows
    # engagement as the tracking endpoints would leave it; one row stands for a message without the pixel
    EmailSend.objects.filter(pk=first.pk).update(opened_at=timezone.now())
    EmailSend.objects.filter(pk=second.pk).update(open_tracked=False)
    EmailSend.objects.filter(pk=third.pk).update(open_tracked=False)
    stats = campaign_stats(campaign)
    assert stats["openRateBase"] == 2 and stats["openRate"] == 50.0  # 1 of the 2 rows with a pixel
    assert "1 of 2 sent with an open pixel (50.00 %)" in _report(campaign)


def test_opens_a_provider_reports_on_rows_without_our_pixel_are_rated_over_delivered(
    make_campaign, org, topic, make_contact, smtp_sink
):
    for name in ("Ann", "Bob"):
        make_contact(topic=topic, first_name=name)
    campaign = make_campaign()
    _send(campaign, org, smtp_sink, 2)
    rows = EmailSend.objects.filter(campaign_id=campaign.pk)
    assert set(rows.values_list("open_tracked", flat=True)) == {False}
    rows.update(delivered_at=timezone.now())
    EmailSend.objects.filter(pk=rows.first().pk).update(opened_at=timezone.now())  # the provider's open event
    stats = campaign_stats(campaign)
    assert stats["openRate"] == 50.0 and stats["openRateBase"] == 2
    assert "of 2 delivered (opens reported by the provider)" in _report(campaign)
