"""The campaign report: rates with their denominators, clicks per link (unique and total), the activity chart,
bounces by classified reason, and the streamed CSV of per-recipient outcomes scoped to the organization."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from campaigns import reports
from campaigns.admin_reports import activity_svg
from delivery.bounces.records import bounce_record
from delivery.models import EmailSend
from testsupport.world import sending_organization

from .test_admin import login
from .test_orchestrator import send_and_drain


@pytest.fixture
def sent_campaign(make_campaign, org, topic, make_contact):
    # Given a campaign sent to four recipients, with clicks, an open, a bounce and a complaint recorded
    for name in ("Ann", "Bob", "Cem", "Dee"):
        make_contact(topic=topic, first_name=name)
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.status == "sent"
    rows = list(EmailSend.objects.filter(campaign_id=campaign.pk).order_by("contact_email"))
    now = timezone.now()
    a, b = "https://example.org/a", "https://example.org/b"
    EmailSend.objects.filter(pk=rows[0].pk).update(
        opened_at=now,
        clicked_at=now,
        clicked_links=[{"url": a, "clickedAt": now.isoformat()}, {"url": a}, {"url": b}],
    )
    EmailSend.objects.filter(pk=rows[1].pk).update(clicked_at=now, clicked_links=[{"url": a}])
    EmailSend.objects.filter(pk=rows[2].pk).update(bounced_at=now, bounce_type="hard")
    EmailSend.objects.filter(pk=rows[3].pk).update(complained_at=now)
    bounce_record(
        organization_id=org.pk,
        send_kind="campaign",
        send_id=rows[2].pk,
        contact_id=rows[2].contact_id,
        email=rows[2].contact_email,
        kind="hard",
        reason="user_unknown",
        status="5.1.1",
        diagnostic="550 5.1.1 no such user",
    )
    cache.clear()
    return campaign


def test_clicks_per_link_count_unique_clickers_and_every_click(sent_campaign):
    links = reports.link_clicks(sent_campaign)
    assert [(x.url, x.unique, x.total) for x in links] == [
        ("https://example.org/a", 2, 3),
        ("https://example.org/b", 1, 1),
    ]


def test_every_rate_names_its_denominator_and_local_sends_rate_over_sent(sent_campaign):
    from delivery.services import campaign_send_stats

    rates = {
        label: (count, rate)
        for label, count, rate in reports.report_rates(campaign_send_stats(sent_campaign.pk))
    }
    assert rates["Sent"][0] == 4
    # the local provider reports no deliveries; opened/clicked rows count as reached, so 2 of 4 delivered
    assert str(rates["Delivered"][1]) == "2 of 4 sent (50.00 %)"
    assert str(rates["Clicked"][1]) == "2 of 2 delivered (100.00 %)"
    assert str(rates["Bounced"][1]) == "1 of 4 sent (25.00 %)"
    assert str(rates["Complained"][1]) == "1 of 4 sent (25.00 %)"


def test_clicks_rate_over_sent_when_nothing_was_delivered():
    whole, what = reports.engagement_basis({"sent": 7, "delivered": 0})
    assert (whole, what) == (7, "sent (the provider reports no deliveries)")
    assert str(reports.Rate(1, 7, what)) == "1 of 7 sent (the provider reports no deliveries) (14.29 %)"


def test_bounces_are_broken_down_by_kind_and_classified_reason(sent_campaign):
    lines = [(x.kind, x.reason, x.count) for x in reports.bounce_breakdown(sent_campaign)]
    assert ("hard", "user unknown", 1) in lines
    assert ("complaint", "not classified (reported by the provider)", 1) in lines
    assert len(lines) == 2


def test_activity_series_and_chart(sent_campaign):
    series = reports.activity_series(sent_campaign)
    assert series.unit == "hour" and not series.truncated
    totals = {name: sum(c[name] for _, c in series.buckets) for name in ("sent", "opened", "clicked")}
    assert totals == {"sent": 4, "opened": 1, "clicked": 2}
    svg = str(activity_svg(series))
    assert svg.startswith("<svg") and 'data-series="opened"' in svg and "<script" not in svg


def test_report_page_and_streamed_csv(client, django_user_model, org, sent_campaign):
    login(client, django_user_model, org)
    change = client.get(reverse("admin:campaigns_campaign_change", args=[sent_campaign.pk]))
    assert reverse("admin:campaigns_campaign_report", args=[sent_campaign.pk]).encode() in change.content
    page = client.get(reverse("admin:campaigns_campaign_report", args=[sent_campaign.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    for needle in (
        "https://example.org/a",
        "user unknown",
        "2 of 4 sent",
        "<svg",
        "Download the per-recipient",
    ):
        assert needle in text, needle
    response = client.get(reverse("admin:campaigns_campaign_report_csv", args=[sent_campaign.pk]))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv"
    body = b"".join(response.streaming_content).decode()
    table = list(csv.DictReader(io.StringIO(body)))
    assert len(table) == 4 and set(table[0]) == set(reports.CSV_COLUMNS)
    by_email = {r["email"]: r for r in table}
    first = min(by_email)
    assert by_email[first]["clicks"] == "3" and by_email[first]["opened_at"]
    assert sorted(r["status"] for r in table).count("sent") >= 1


def test_report_and_csv_of_another_organization_are_not_found(client, django_user_model, org, sent_campaign):
    other = sending_organization("Other", "other.test", sender="news")
    login(client, django_user_model, other, username="bob")
    assert client.get(reverse("admin:campaigns_campaign_report", args=[sent_campaign.pk])).status_code == 404
    assert (
        client.get(reverse("admin:campaigns_campaign_report_csv", args=[sent_campaign.pk])).status_code == 404
    )


def test_csv_lines_are_produced_lazily(sent_campaign):
    lines = reports.outcome_csv_lines(sent_campaign, chunk_size=1)
    assert next(lines).startswith("email,first_name")
    assert sum(1 for _ in lines) == 4


def test_csv_cells_that_a_spreadsheet_would_run_are_quoted():
    assert reports._cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
