"""Campaign mail from a real campaign (issue 9 item 6: DLV-16, DLV-20, DLV-21, DLV-23, CMP-27): the walker's
chunks, then what the `local` provider stored for each recipient — bulk headers, one-click unsubscribe, the
footer, the view-in-browser link, the open pixel and signed click links — and the recipient's open, click and
unsubscribe coming back into the campaign's report."""

from __future__ import annotations

import re

from campaigns.models import Campaign
from campaigns.services import campaign_send_now
from delivery.models import EmailSend, LocalMessage
from owlat.permissions import Authority
from testsupport.queue import drain_queue, queued_tasks

SYSTEM = Authority.system("test")
SITE = "http://testserver"


def _send(campaign, org, **drain):
    assert campaign_send_now(
        authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="user-1"
    ).ok
    drain_queue(**drain)
    campaign.refresh_from_db()


def _href(html: str, path: str) -> str:
    match = re.search(rf'href="{re.escape(SITE)}({re.escape(path)}[^"]+)"', html)
    assert match, f"no {path} link in {html}"
    return match.group(1).replace("&amp;", "&")


def test_the_walker_hands_rows_to_the_campaign_pool_in_chunks_of_50(make_campaign, org, topic, make_contact):
    """DLV-16: one campaign-pool job per chunk of `CAMPAIGN_ENQUEUE_CHUNK_SIZE` (50) rows."""
    for _ in range(120):
        make_contact(topic=topic)
    campaign = make_campaign()
    assert campaign_send_now(
        authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="user-1"
    ).ok
    drain_queue(queue="default", max_tasks=2)  # the orchestrator, then one page hop
    jobs = [t for t in queued_tasks("campaign") if t.func == "delivery.tasks.send_batch_task"]
    assert sorted(len(t.args[1]) for t in jobs) == [20, 50, 50]
    assert {t.args[0] for t in jobs} == {"campaign"}
    ids = [i for t in jobs for i in t.args[1]]
    assert len(set(ids)) == 120 == EmailSend.objects.filter(campaign_id=campaign.pk, pk__in=ids).count()


def test_topic_campaign_mail_end_to_end(make_campaign, org, topic, make_contact, client, settings):
    settings.DELIVERY_OPEN_PIXEL_MIN_TEXT = 0  # the short test body gets the open pixel too
    contact = make_contact(topic=topic, first_name="Ada")
    other = make_contact(topic=topic, first_name="Bo")
    campaign = make_campaign()
    _send(campaign, org)
    assert campaign.status == "sent"
    row = EmailSend.objects.get(campaign_id=campaign.pk, contact=contact)
    msg = LocalMessage.objects.get(send_id=row.pk)
    headers = msg.headers
    # DLV-23
    assert headers["Precedence"] == "bulk" and headers["Auto-Submitted"] == "auto-generated"
    assert headers["List-Id"].startswith("Newsletter <") and headers["List-Id"].endswith(".acme.test>")
    assert headers["Feedback-ID"] == f"campaign:{org.pk}:{campaign.pk}:owlat"
    # DLV-21: one-click header and (topic campaign) the footer with unsubscribe and preference links
    assert re.fullmatch(rf"<{re.escape(SITE)}/unsub/[^>]+>", headers["List-Unsubscribe"])
    assert headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert "owlat-footer" in msg.html and "Acme Inc., 1 Main Street" in msg.html
    unsub = _href(msg.html, "/unsub/")
    assert _href(msg.html, "/preferences/")
    # CMP-27: the view-in-browser link, never tracked
    archive = f"{SITE}/archive?token={campaign.archive_token}"
    assert msg.html.count(f'href="{archive}"') == 1 and f"in your browser: {archive}" in msg.text
    assert client.get(archive.removeprefix(SITE)).status_code == 200  # the campaign is sent: the page shows
    # DLV-20: the template's link is signed and tracked, the pixel is there
    assert "https://example.org/post" not in msg.html
    click = _href(msg.html, "/t/c/")
    pixel = re.search(rf'src="{re.escape(SITE)}(/t/o/[^"]+)"', msg.html).group(1)
    assert msg.subject == "News for Ada" and "Hello Ada" in msg.html

    assert client.get(pixel).status_code == 200
    response = client.get(click)
    assert response.status_code == 302 and response["Location"] == "https://example.org/post"
    assert client.post(unsub).status_code == 200
    row.refresh_from_db()
    assert row.opened_at and row.clicked_at and row.unsubscribed_at
    from campaigns.completion import refresh_sent_stats

    refresh_sent_stats()
    campaign = Campaign.objects.get(pk=campaign.pk)
    assert (campaign.stats_sent, campaign.stats_opened, campaign.stats_clicked) == (2, 1, 1)
    assert campaign.stats_unsubscribed == 1 and campaign.stats_delivered == 1  # ever reached (DLV-09)
    assert LocalMessage.objects.filter(send_id=EmailSend.objects.get(contact=other).pk).count() == 1


def test_segment_campaign_mail_has_the_unsubscribe_link_but_no_list_id_or_preferences(
    make_campaign, org, make_contact
):
    from owlat.models import Segment

    make_contact(first_name="Cy")
    segment = Segment.objects.create(
        organization=org,
        name="Cys",
        filters={
            "logic": "AND",
            "conditions": [
                {"kind": "contact_property", "field": "firstName", "operator": "equals", "value": "Cy"}
            ],
        },
    )
    campaign = make_campaign(audience={"kind": "segment", "segmentId": str(segment.pk)})
    _send(campaign, org)
    assert campaign.status == "sent"
    msg = LocalMessage.objects.get(send_id=EmailSend.objects.get(campaign_id=campaign.pk).pk)
    assert "List-Id" not in msg.headers and msg.headers["Precedence"] == "bulk"
    assert msg.headers["List-Unsubscribe"].startswith(f"<{SITE}/unsub/")
    assert "/unsub/" in msg.html and "/preferences/" not in msg.html


def test_a_template_placing_the_view_in_browser_link_gets_it_once(
    make_campaign, org, topic, make_contact, template
):
    template.html_content = '<p>Hi</p><p><a href="{{viewInBrowserUrl}}">Read online</a></p>'
    template.save()
    make_contact(topic=topic)
    campaign = make_campaign()
    _send(campaign, org)
    msg = LocalMessage.objects.get(send_id=EmailSend.objects.get(campaign_id=campaign.pk).pk)
    archive = f"{SITE}/archive?token={campaign.archive_token}"
    assert msg.html.count(archive) == 1 and "Read online" in msg.html
    assert "View this email in your browser" not in msg.html


def test_one_click_header_offers_the_signed_mailto_address_when_bounces_come_back(
    make_campaign, org, topic, make_contact, settings
):
    from delivery import verp

    settings.BOUNCE_DOMAIN = "bounce-intake.owlat.test"
    contact = make_contact(topic=topic)
    campaign = make_campaign()
    _send(campaign, org)
    row = EmailSend.objects.get(campaign_id=campaign.pk, contact=contact)
    header = LocalMessage.objects.get(send_id=row.pk).headers["List-Unsubscribe"]
    https, mailto = (part.strip().strip("<>") for part in header.split(","))
    assert https.startswith(f"{SITE}/unsub/")  # RFC 8058: the one-click URL first
    address = mailto.removeprefix("mailto:")
    assert verp.parse_unsubscribe_address(address) == ("campaign", str(row.pk))
