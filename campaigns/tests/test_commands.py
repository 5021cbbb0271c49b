"""Commands and demo data."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from campaigns.models import Campaign


def run(*args, stderr=None):
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=stderr if stderr is not None else io.StringIO())
    return out.getvalue()


def test_campaign_transition_dry_run_and_actor(make_campaign):
    from owlat.models import AuditLog

    campaign = make_campaign()
    assert "would move draft → sending" in run("campaign_transition", str(campaign.pk), "send", "--dry-run")
    campaign.refresh_from_db()
    assert campaign.status == "draft"
    assert "would be refused" in run("campaign_transition", str(campaign.pk), "cancel", "--dry-run")
    with pytest.raises(CommandError, match="Only scheduled, sending or paused campaigns can be cancelled"):
        run("campaign_transition", str(campaign.pk), "cancel")
    out = run("campaign_transition", str(campaign.pk), "send", "--actor", "system:ops-ticket-42")
    assert "transitioned: draft → sending" in out
    assert AuditLog.objects.get(action="campaign.send_started").user_id == "system:ops-ticket-42"
    with pytest.raises(CommandError, match="not a campaign id"):
        run("campaign_transition", "nope", "send")
    with pytest.raises(CommandError, match="reject needs --reason"):
        run("campaign_transition", str(campaign.pk), "reject")


def _held_for_review(make_campaign, template, topic, make_contact):
    """A campaign sent from the command line whose content the scan holds (shortened link, shouting subject)."""
    from testsupport.queue import drain_queue

    template.html_content = '<p>Hi</p><a href="https://bit.ly/x">Go</a>'
    template.subject = "HELLO THERE!!!"
    template.save()
    make_contact(topic=topic)
    campaign = make_campaign()
    run("campaign_transition", str(campaign.pk), "send")
    drain_queue(max_tasks=100)
    campaign.refresh_from_db()
    assert campaign.status == "pending_review"
    return campaign


def test_review_from_the_command_line(make_campaign, template, topic, make_contact):
    campaign = _held_for_review(make_campaign, template, topic, make_contact)
    run("campaign_transition", str(campaign.pk), "reject", "--reason", "links")
    campaign.refresh_from_db()
    assert campaign.content_block_reason == "Rejected in review: links"


def test_backfill_is_a_dry_run_unless_apply(make_campaign, topic, make_contact):
    from testsupport.queue import drain_queue

    make_contact(topic=topic)
    campaign = make_campaign()
    run("campaign_transition", str(campaign.pk), "send")
    drain_queue(max_tasks=100)
    Campaign.objects.filter(pk=campaign.pk).update(stats_sent=7)
    progress = io.StringIO()
    out = run("backfill_campaign_stats", stderr=progress)
    assert "1/1" in progress.getvalue() and "campaign" in progress.getvalue()  # the progress bar
    assert "stats_sent 7→1" in out and "1 with wrong counters" in out and "dry run" in out
    assert Campaign.objects.get(pk=campaign.pk).stats_sent == 7
    run("backfill_campaign_stats", "--apply")
    assert Campaign.objects.get(pk=campaign.pk).stats_sent == 1
    assert "0 with wrong counters" in run("backfill_campaign_stats")
    assert "reconciled 0 sending campaigns" in run("reconcile_sending_campaigns")


def test_demo_data_has_a_sent_campaign_with_a_report_and_a_draft(db, settings):
    settings.EMAIL_PROVIDER = "local"
    settings.SITE_URL = "http://127.0.0.1:8000"
    from owlat.demo import bootstrap

    result = bootstrap(demo=True, password="pw")
    org = result.organization
    sent = Campaign.objects.get(organization=org, name__contains="sent")
    draft = Campaign.objects.get(organization=org, status="draft")
    assert sent.status == "sent" and sent.stats_sent >= 1 and sent.stats_opened >= 1
    from campaigns.preflight import validate_ready_to_send

    assert validate_ready_to_send(draft).ready
    bootstrap(demo=True, password="pw")  # idempotent
    assert Campaign.objects.filter(organization=org).count() == 2


def test_backfill_reads_the_campaigns_one_batch_at_a_time(make_campaign):
    """`--batch-size` bounds every read of the campaign table (it once loaded the whole table per batch)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from campaigns.operations import campaign_stats_backfill

    made = sorted(str(make_campaign().pk) for _ in range(3))
    with CaptureQueriesContext(connection) as ctx:
        report = campaign_stats_backfill(apply=False, batch_size=2)
    reads = [q["sql"] for q in ctx.captured_queries if 'FROM "campaigns_campaign"' in q["sql"]]
    assert report.campaigns == 3 and report.last_id == made[-1]
    assert len(reads) == 3  # two full batches' worth: 2 + 1 rows, then the empty one
    assert all("LIMIT 2" in sql for sql in reads), reads


def test_approve_from_the_command_line_sends_and_is_not_held_again(
    make_campaign, template, topic, make_contact
):
    from testsupport.queue import drain_queue

    campaign = _held_for_review(make_campaign, template, topic, make_contact)
    assert "would move pending_review → sending" in run(
        "campaign_transition", str(campaign.pk), "approve", "--dry-run"
    )
    out = run("campaign_transition", str(campaign.pk), "approve", "--actor", "system:ops-review")
    assert "transitioned: pending_review → sending" in out
    drain_queue(max_tasks=100)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and campaign.approved_content_fingerprint


def test_reconcile_command_completes_a_finished_send(make_campaign, topic, make_contact, monkeypatch):
    """CMP-14 by hand: a sending campaign whose rows have all left the queue but whose completion callback
    (DLV-18) was lost stays `sending` until the reconcile completes it and rolls its counters up."""
    from delivery.lifecycle import refs
    from testsupport.queue import drain_queue

    make_contact(topic=topic)
    campaign = make_campaign()
    monkeypatch.setitem(refs._completion_handlers, "campaign", [])  # the lost callback
    run("campaign_transition", str(campaign.pk), "send")
    drain_queue(max_tasks=100)
    campaign.refresh_from_db()
    assert campaign.status == "sending" and campaign.stats_sent == 0
    assert "reconciled 1 sending campaigns, completed 1" in run("reconcile_sending_campaigns")
    campaign.refresh_from_db()
    assert campaign.status == "sent" and campaign.stats_sent == 1
