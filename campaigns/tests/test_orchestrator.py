"""The send orchestrator and the paged walker, with tasks run in-process (`drain_queue`) and the `local`
provider: eligibility, one pipeline per send, the content-scan gate and the review queue, crash and resume,
A/B phases, languages, freezing, the archive, the empty-audience fast path and the watchdog."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from campaigns.lifecycle import campaign_transition
from campaigns.models import Campaign, CampaignSendJob, ContentScanResult
from campaigns.services import campaign_send_now
from delivery.models import EmailSend, LocalMessage
from owlat.permissions import Authority
from testsupport.queue import drain_queue, queued_tasks

SYSTEM = Authority.system("test")


def send_and_drain(campaign, org):
    out = campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="user-1")
    assert out.ok, out
    ran = drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    return ran


def rows(campaign):
    return EmailSend.objects.filter(campaign_id=campaign.pk)


@pytest.fixture
def audience_world(org, topic, make_contact):
    """Three eligible members and one of each excluded kind."""
    from owlat.models import BlockedEmail, Topic

    eligible = [make_contact(topic=topic, first_name=f"E{i}") for i in range(3)]
    suppressed = make_contact(topic=topic)
    BlockedEmail.objects.create(organization=org, email=suppressed.email, reason="bounced")
    make_contact(topic=topic, unsubscribed_at=timezone.now())
    make_contact(topic=topic, pending=True)
    make_contact(None, topic=topic)
    make_contact(topic=topic, deleted_at=timezone.now())
    make_contact()  # not a member
    other_topic = Topic.objects.create(organization=org, name="Other")
    make_contact(topic=other_topic)
    return eligible


def test_topic_campaign_reaches_exactly_the_eligible_contacts(make_campaign, org, audience_world):
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert {r.contact_id for r in rows(campaign)} == {c.pk for c in audience_world}
    assert campaign.status == "sent"
    assert LocalMessage.objects.filter(send_id__in=rows(campaign).values("pk")).count() == 3
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert (job.phase, job.enqueued_count, job.total_candidates) == ("done", 3, 3)
    row = rows(campaign).get(contact=audience_world[0])
    assert row.personalized_subject == "News for E0" and row.ab_variant is None
    assert campaign.stats_sent == 3
    from owlat.models import OrganizationSettings

    assert OrganizationSettings.objects.get(organization=org).daily_send_count == 3


def test_doi_topic_excludes_unconfirmed_contacts(make_campaign, org, make_contact):
    from owlat.models import Topic

    doi_topic = Topic.objects.create(organization=org, name="DOI", require_double_opt_in=True)
    ok = make_contact(topic=doi_topic)  # doi not_required counts as confirmed
    from owlat.models import Contact

    pending = make_contact(topic=doi_topic)
    Contact.objects.filter(pk=pending.pk).update(doi_status="pending")
    campaign = make_campaign(audience={"kind": "topic", "topicId": str(doi_topic.pk)})
    send_and_drain(campaign, org)
    assert [r.contact_id for r in rows(campaign)] == [ok.pk]


def test_empty_audience_completes_immediately(make_campaign, org):
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.status == "sent" and not rows(campaign).exists()
    from owlat.models import AuditLog

    assert (
        AuditLog.objects.get(action="campaign.sent", resource_id=str(campaign.pk)).user_id
        == "system:orchestrator"
    )


def test_one_pipeline_per_send(make_campaign, org, audience_world):
    from campaigns.orchestrator import start_campaign_send

    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    assert start_campaign_send(campaign.pk) == "send job opened"
    assert start_campaign_send(campaign.pk) == "skipped: Already running"  # a duplicated task
    drain_queue(max_tasks=5000)
    assert rows(campaign).count() == 3
    assert CampaignSendJob.objects.filter(campaign=campaign).count() == 1


def test_scheduled_run_only_moves_to_sending(make_campaign, org, audience_world):
    from campaigns.orchestrator import start_campaign_send
    from campaigns.services import campaign_schedule

    campaign = make_campaign()
    when = timezone.now() + dt.timedelta(minutes=10)
    assert campaign_schedule(
        authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u", scheduled_at=when
    ).ok
    assert start_campaign_send(campaign.pk) == "skipped: Not yet due (rescheduled)"
    result = start_campaign_send(campaign.pk, now=when + dt.timedelta(seconds=1))
    assert result.startswith("moved to sending")
    campaign.refresh_from_db()
    assert campaign.status == "sending" and not CampaignSendJob.objects.filter(campaign=campaign).exists()
    from owlat.models import AuditLog

    assert AuditLog.objects.get(action="campaign.send_started").user_id == "system:scheduler_tick"
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and rows(campaign).count() == 3


@pytest.mark.parametrize("status", ["draft", "cancelled"])
def test_entry_guards(make_campaign, status):
    from campaigns.orchestrator import start_campaign_send

    campaign = make_campaign()
    if status == "cancelled":
        campaign_transition(
            campaign_id=campaign.pk,
            to="scheduled",
            actor="u",
            input={"scheduled_at": timezone.now() + dt.timedelta(hours=1)},
        )
        campaign_transition(campaign_id=campaign.pk, to="cancelled", actor="u")
    expected = {"draft": "Campaign was unscheduled", "cancelled": "Campaign was cancelled"}[status]
    assert start_campaign_send(campaign.pk) == f"skipped: {expected}"


# --- content scan and review (CMP-25, CMP-12) -------------------------------------------------------------------


def test_blocked_content_returns_to_draft_without_rows(make_campaign, org, template, audience_world):
    template.subject = "Free money for you"
    template.html_content = "<p>Cheap viagra</p>"
    template.save()
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.status == "draft"
    assert campaign.content_block_reason.startswith("Content blocked: ")
    assert 'Spam phrase "free money"' in campaign.content_block_reason
    assert not rows(campaign).exists()
    scan = ContentScanResult.objects.get(campaign=campaign)
    assert scan.level == "blocked" and scan.score == 40
    # each rule that hit is stored with the offending text the reviewer reads
    assert {(f["rule"], f["match"]) for f in scan.flags} >= {("spam_keywords", "Free money")}
    assert all(f.get("excerpt") for f in scan.flags)


def test_suspicious_then_approved_sends_and_is_not_held_again(make_campaign, org, template, audience_world):
    from campaigns.review import review_approve

    template.html_content = '<p>Hello</p><a href="https://bit.ly/x">Go</a>'
    template.subject = "HELLO THERE!!!"  # shortener 10 + caps 3 + punctuation 3 = 16: suspicious
    template.save()
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.status == "pending_review" and not rows(campaign).exists()
    assert ContentScanResult.objects.get(campaign=campaign).level == "suspicious"
    out = review_approve(campaign_id=campaign.pk, actor="staff-1", authority=Authority.platform_staff())
    assert out.ok
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and rows(campaign).count() == 3
    from owlat.models import AuditLog

    assert AuditLog.objects.get(action="campaign.review_approved").user_id == "staff-1"
    # idempotent: acting again shows the reason and changes nothing
    again = review_approve(campaign_id=campaign.pk, actor="staff-1", authority=Authority.platform_staff())
    assert not again.ok and "not pending review" in again.message


def test_reject_returns_to_draft_with_reason(make_campaign, org, template, audience_world):
    from campaigns.review import review_reject

    template.html_content = '<p>Hello</p><a href="https://bit.ly/x">Go</a>'
    template.subject = "HELLO THERE!!!"
    template.save()
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.status == "pending_review"
    assert not review_reject(
        campaign_id=campaign.pk, actor="staff-1", reason=" ", authority=Authority.platform_staff()
    ).ok
    assert review_reject(
        campaign_id=campaign.pk,
        actor="staff-1",
        reason="Shortened links",
        authority=Authority.platform_staff(),
    ).ok
    campaign.refresh_from_db()
    assert campaign.status == "draft"
    assert campaign.content_block_reason == "Rejected in review: Shortened links"


# --- crash and resume (CMP-29) --------------------------------------------------------------------------------------


def test_a_crashed_page_resumes_from_the_checkpoint(
    make_campaign, org, topic, make_contact, monkeypatch, settings
):
    from campaigns import audience, walker

    monkeypatch.setattr(audience, "PAGE_SIZE", 4)
    settings.CAMPAIGN_WALK_PAGES_PER_HOP = 1  # one page per hop: each hop hands the walk to the next
    contacts = [make_contact(topic=topic) for i in range(10)]
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)  # the orchestrator opens the job
    first_token = CampaignSendJob.objects.get(campaign=campaign).hop_token
    drain_queue(queue="default", max_tasks=1)  # page 1
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert job.pages == 1 and rows(campaign).count() == 4
    assert job.hop_token != first_token  # handed over to the next hop
    assert (
        walker.resolve_campaign_page(campaign.pk, "", first_token) == "stale hop: another hop owns the walk"
    )
    # page 2 crashes after creating its rows: the whole page rolls back, the checkpoint stays
    real = walker._enqueue_chunks

    def boom(ids, at):
        raise RuntimeError("worker killed")

    monkeypatch.setattr(walker, "_enqueue_chunks", boom)
    cursor, token = job.cursor, job.hop_token
    with pytest.raises(RuntimeError):
        walker.resolve_campaign_page(campaign.pk, cursor, token)
    job.refresh_from_db()
    assert job.cursor == cursor and job.hop_token == token and rows(campaign).count() == 4
    monkeypatch.setattr(walker, "_enqueue_chunks", real)
    # the re-run (redelivered task or watchdog) continues; a stale duplicate of page 1 does nothing
    assert walker.resolve_campaign_page(campaign.pk, "") == "stale hop: cursor already advanced"
    walker.resolve_campaign_page(campaign.pk, cursor, token)
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    assert sorted(r.contact_id for r in rows(campaign)) == sorted(c.pk for c in contacts)
    assert LocalMessage.objects.filter(send_id__in=rows(campaign).values("pk")).count() == 10


def test_a_hop_walks_several_pages_and_a_crash_mid_hop_resumes_after_the_last_committed_page(
    make_campaign, org, topic, make_contact, monkeypatch, settings
):
    """CMP-29 with several pages per task execution: every page is its own checkpoint, so a hop that dies after
    its first page is redelivered (same cursor and token) and resumes at page 2 — nobody twice, nobody lost."""
    from campaigns import audience, walker

    monkeypatch.setattr(audience, "PAGE_SIZE", 4)
    settings.CAMPAIGN_WALK_PAGES_PER_HOP = 2
    contacts = [make_contact(topic=topic) for i in range(10)]  # pages of 4, 4, 2
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)  # the orchestrator opens the job and enqueues the first hop
    token = CampaignSendJob.objects.get(campaign=campaign).hop_token
    real, calls = walker._enqueue_chunks, []

    def second_page_dies(ids, at):
        calls.append(len(ids))
        if len(calls) == 2:
            raise RuntimeError("worker killed")
        return real(ids, at)

    monkeypatch.setattr(walker, "_enqueue_chunks", second_page_dies)
    with pytest.raises(RuntimeError):
        walker.resolve_campaign_page(campaign.pk, "", token)  # the first hop, run by hand
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert (job.pages, rows(campaign).count(), job.hop_token) == (1, 4, token)  # page 1 committed, page 2 not
    monkeypatch.setattr(walker, "_enqueue_chunks", real)
    # the redelivered hop resumes from the checkpoint: pages 2 and 3 in one execution, the walk is done
    assert walker.resolve_campaign_page(campaign.pk, "", token).endswith("walk done (10 total)")
    job.refresh_from_db()
    assert job.pages == 3 and job.phase == "done"
    drain_queue(max_tasks=5000)  # the queued original of the first hop finds the walk done
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    assert sorted(r.contact_id for r in rows(campaign)) == sorted(c.pk for c in contacts)
    assert LocalMessage.objects.filter(send_id__in=rows(campaign).values("pk")).count() == 10


def test_the_walk_ends_on_its_last_full_page(make_campaign, org, topic, make_contact, monkeypatch):
    """A page reads one candidate past its end, so an audience of exactly two pages is walked in two page
    transactions (no third, empty page) and every member is reached once."""
    from campaigns import audience

    monkeypatch.setattr(audience, "PAGE_SIZE", 4)
    contacts = [make_contact(topic=topic) for _ in range(8)]
    campaign = make_campaign()
    send_and_drain(campaign, org)
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert (job.pages, job.phase, job.enqueued_count) == (2, "done", 8)
    assert campaign.status == "sent"
    assert sorted(r.contact_id for r in rows(campaign)) == sorted(c.pk for c in contacts)


def test_a_topic_page_bounds_both_sides_of_the_join_by_the_cursor(org, topic, make_contact):
    """The keyset bound is on the contact and on the membership, so PostgreSQL starts both index scans at the
    cursor (with one side unbounded a merge join re-read every contact before it: a quadratic walk)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from campaigns.audience import audience_page

    contacts = sorted((make_contact(topic=topic) for _ in range(5)), key=lambda c: str(c.pk))
    audience = {"kind": "topic", "topicId": str(topic.pk)}
    first = audience_page(org.pk, audience, "", limit=2)
    assert [c.contact_id for c in first.eligible] == [str(c.pk) for c in contacts[:2]] and not first.exhausted
    with CaptureQueriesContext(connection) as ctx:
        second = audience_page(org.pk, audience, first.next_cursor, limit=3)
    assert [c.contact_id for c in second.eligible] == [str(c.pk) for c in contacts[2:]] and second.exhausted
    page_sql = ctx.captured_queries[0]["sql"]
    assert '"owlat_contact"."id" >' in page_sql and '"owlat_contacttopic"."contact_id" >' in page_sql
    assert page_sql.count("JOIN") == 2  # the membership once, the topic (its DOI flag) once


def test_watchdog_redrives_a_stuck_walk(make_campaign, org, topic, make_contact):
    from campaigns import walker

    make_contact(topic=topic)
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)
    # the page hop got lost
    from django_q.models import OrmQ

    OrmQ.objects.all().delete()
    assert walker.stuck_walks_redrive() == 0
    assert walker.stuck_walks_redrive(now=timezone.now() + dt.timedelta(minutes=11)) == 1
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and rows(campaign).count() == 1


def test_no_provider_at_hop_time_retries_in_five_minutes(make_campaign, org, topic, make_contact, settings):
    from campaigns import walker
    from owlat.models import DueTask

    make_contact(topic=topic)
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)
    settings.EMAIL_PROVIDER = ""
    now = timezone.now()
    assert walker.resolve_campaign_page(campaign.pk, "", now=now).startswith("no delivery provider")
    due = DueTask.objects.get(func=walker.PAGE_TASK)
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert due.due_at == now + dt.timedelta(minutes=5) and due.args == [str(campaign.pk), "", job.hop_token]
    assert job.updated_at == now


# --- A/B (CMP-32, CMP-33, CMP-19) ------------------------------------------------------------------------------------


def test_ab_test_phases_never_mail_the_test_cohort_twice(make_campaign, org, topic, make_contact, template):
    from campaigns.abtest import ab_auto_declare, ab_enable, cohort_fraction, hash_fraction, variant_for_hash
    from owlat.models import DueTask

    contacts = [make_contact(topic=topic) for _ in range(60)]
    campaign = make_campaign()
    cfg = {
        "testType": "subject",
        "variantBSubject": "B: {{firstName|'friend'}}",
        "splitPercentage": 20,
        "winnerCriteria": "open_rate",
        "testDuration": 2,
    }
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=Authority.member("owner")).ok
    send_and_drain(campaign, org)
    assert campaign.status == "sending" and campaign.ab_test_status == "testing"
    tf = cohort_fraction(20)
    expected = {c.pk: variant_for_hash(hash_fraction(str(campaign.pk), str(c.pk)), tf) for c in contacts}
    got = {r.contact_id: r.ab_variant for r in rows(campaign)}
    assert got == {k: v for k, v in expected.items() if v is not None}
    assert all(r.personalized_subject == "B: friend" for r in rows(campaign).filter(ab_variant="B"))
    assert all(r.personalized_subject == "News for you" for r in rows(campaign).filter(ab_variant="A"))
    # one B row opened → B wins on open rate once the window (a due task) has passed
    b_row = rows(campaign).filter(ab_variant="B").first()
    from delivery.lifecycle import SendRef, send_transition

    send_transition(SendRef("campaign", str(b_row.pk)), "opened", {"at": timezone.now()})
    due = DueTask.objects.get(func__endswith="campaign_ab_auto_winner_task")
    assert due.due_at > timezone.now() + dt.timedelta(hours=1, minutes=59)
    # the due task runs only after the window: not at +1 h 50 min, then at +2 h 1 min (the dispatcher's path)
    from owlat.jobs import dispatch_due_tasks

    assert dispatch_due_tasks(now=timezone.now() + dt.timedelta(hours=1, minutes=50)) == 0
    assert dispatch_due_tasks(now=due.due_at + dt.timedelta(minutes=1)) == 1
    ran = drain_queue(max_tasks=5000, dispatch_due=False)
    [auto] = [t for t in ran if t.func.endswith("campaign_ab_auto_winner_task")]
    assert auto.ok and auto.result == "winner B"
    assert ab_auto_declare(campaign.pk) == "skipped: not testing"
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and campaign.ab_winner == "B"
    assert rows(campaign).count() == 60  # everyone exactly once
    remainder = [c for c, v in expected.items() if v is None]
    assert set(rows(campaign).filter(contact_id__in=remainder).values_list("ab_variant", flat=True)) == {"B"}
    assert LocalMessage.objects.filter(send_id__in=rows(campaign).values("pk")).count() == 60


def test_content_test_uses_the_b_template(make_campaign, org, topic, make_contact):
    from campaigns.abtest import ab_declare_winner, ab_enable
    from templates.models import EmailTemplate

    b = EmailTemplate.objects.create(
        organization=org, name="B", subject="B subject", html_content="<p>B body</p>"
    )
    for _ in range(40):
        make_contact(topic=topic)
    campaign = make_campaign()
    cfg = {
        "testType": "content",
        "variantBTemplateId": str(b.pk),
        "splitPercentage": 50,
        "winnerCriteria": "manual",
    }
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=Authority.member("owner")).ok
    send_and_drain(campaign, org)
    b_rows = rows(campaign).filter(ab_variant="B")
    assert b_rows.exists() and all(r.email_template_id == b.pk for r in b_rows)
    assert all(r.personalized_subject == "B subject" for r in b_rows)
    assert ab_declare_winner(
        campaign_id=campaign.pk, winner="A", actor="u", authority=Authority.member("owner")
    ).ok
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and rows(campaign).count() == 40


# --- languages, freezing, archive, complaints -------------------------------------------------------------------------


def test_language_groups(make_campaign, org, topic, make_contact):
    de = make_contact(topic=topic, first_name="Jo", language="de")
    fr = make_contact(topic=topic, first_name="Al", language="fr")
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert rows(campaign).get(contact=de).personalized_subject == "Neues für Jo"
    assert rows(campaign).get(contact=fr).personalized_subject == "News for Al"  # no fr translation
    msg = LocalMessage.objects.get(send_id=rows(campaign).get(contact=de).pk)
    assert "Hallo Jo" in msg.html


def test_segment_audience_is_frozen_at_send(make_campaign, org, make_contact):
    from campaigns import audience
    from owlat.models import Segment

    make_contact(first_name="Ann")
    make_contact(first_name="Bob")
    filters = {
        "logic": "AND",
        "conditions": [
            {"kind": "contact_property", "field": "firstName", "operator": "equals", "value": "Ann"}
        ],
    }
    segment = Segment.objects.create(organization=org, name="Anns", filters=filters)
    campaign = make_campaign(audience={"kind": "segment", "segmentId": str(segment.pk)})
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)  # the orchestrator freezes
    campaign.refresh_from_db()
    assert campaign.audience["frozenFilters"] == filters
    segment.filters = {**filters, "conditions": [{**filters["conditions"][0], "value": "Bob"}]}
    segment.save()
    drain_queue(max_tasks=5000)
    assert [r.contact.first_name for r in rows(campaign)] == ["Ann"]
    assert audience.audience_frozen(Campaign.objects.get(pk=campaign.pk)) is None


def test_topic_audience_is_frozen_at_send_start(make_campaign, org, topic, make_contact):
    from campaigns import audience

    before = make_contact(topic=topic, first_name="Ann")
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)  # the orchestrator freezes
    campaign.refresh_from_db()
    assert "frozenAt" in campaign.audience
    make_contact(topic=topic, first_name="Late")  # joins after the send started
    drain_queue(max_tasks=5000)
    assert [r.contact_id for r in rows(campaign)] == [before.pk]
    assert audience.audience_frozen(Campaign.objects.get(pk=campaign.pk)) is None


def test_archive_snapshot_and_public_page(make_campaign, org, topic, make_contact, client):
    contact = make_contact(topic=topic, first_name="Zed")
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)
    campaign.refresh_from_db()
    assert len(campaign.archive_token) == 24 and "Hello" in campaign.archive_html_content
    assert client.get(f"/archive?token={campaign.archive_token}").status_code == 404  # not yet sent
    drain_queue(max_tasks=5000)
    page = client.get(f"/archive?token={campaign.archive_token}")
    assert page.status_code == 200 and b"Hello" in page.content and b"Zed" not in page.content
    assert client.get("/archive?token=nope").status_code == 404
    from delivery.models import CampaignSendSettings

    assert CampaignSendSettings.objects.get(campaign_id=campaign.pk).view_in_browser_url.endswith(
        f"/archive?token={campaign.archive_token}"
    )
    assert contact


def test_archive_disabled_by_flag(make_campaign, org, topic, make_contact):
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(feature_flags={"campaigns.archive": False})
    make_contact(topic=topic)
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.archive_token is None


def test_complaint_appends_a_flag_to_the_stored_scan(make_campaign, org, template, topic, make_contact):
    from campaigns.review import review_approve
    from delivery.lifecycle import SendRef, send_transition

    template.html_content = '<p>Hi</p><a href="https://bit.ly/x">Go</a>'
    template.subject = "HELLO THERE!!!"
    template.save()
    make_contact(topic=topic)
    campaign = make_campaign()
    send_and_drain(campaign, org)
    review_approve(campaign_id=campaign.pk, actor="staff", authority=Authority.platform_staff())
    drain_queue(max_tasks=5000)
    row = rows(campaign).get()
    send_transition(SendRef("campaign", str(row.pk)), "complained", {"at": timezone.now()})
    flags = ContentScanResult.objects.filter(campaign=campaign).order_by("-scanned_at").first().flags
    assert flags[-1] == {
        "rule": "suspicious_pattern",
        "severity": "low",
        "description": "Spam complaint received (feedback loop)",
    }


def test_reconcile_cron_completes_and_rolls_up(make_campaign, org, topic, make_contact):
    from campaigns.completion import reconcile_sending_campaigns

    make_contact(topic=topic)
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=2)  # orchestrator + page; the send job stays queued
    assert reconcile_sending_campaigns() == {"reconciled": 1, "completed": 0}
    assert any(t.func == "delivery.tasks.send_batch_task" for t in queued_tasks("campaign"))
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and campaign.stats_sent == 1


def test_scheduled_campaign_cron_starts_due_campaigns_once(make_campaign, org, audience_world):
    from campaigns.completion import process_scheduled_campaigns
    from campaigns.services import campaign_schedule

    due = make_campaign()
    later = make_campaign()
    soon = timezone.now() + dt.timedelta(minutes=1)
    assert campaign_schedule(
        authority=SYSTEM, campaign_id=due.pk, organization_id=org.pk, actor="u", scheduled_at=soon
    ).ok
    assert campaign_schedule(
        authority=SYSTEM,
        campaign_id=later.pk,
        organization_id=org.pk,
        actor="u",
        scheduled_at=soon + dt.timedelta(hours=5),
    ).ok
    assert process_scheduled_campaigns(now=soon + dt.timedelta(seconds=5)) == 1
    due.refresh_from_db()
    later.refresh_from_db()
    assert (due.status, later.status) == ("sending", "scheduled")
    assert process_scheduled_campaigns(now=soon + dt.timedelta(seconds=65)) == 0  # nothing twice
    drain_queue(max_tasks=5000)
    due.refresh_from_db()
    assert due.status == "sent" and rows(due).count() == 3


def test_refresh_of_sent_campaign_stats(make_campaign, org, audience_world):
    from campaigns.completion import refresh_sent_stats
    from delivery.lifecycle import SendRef, send_transition

    campaign = make_campaign()
    send_and_drain(campaign, org)
    row = rows(campaign).first()
    send_transition(SendRef("campaign", str(row.pk)), "opened", {"at": timezone.now()})
    assert refresh_sent_stats() == 1
    campaign.refresh_from_db()
    assert campaign.stats_opened == 1 and campaign.stats_delivered == 1


def test_sent_campaign_stats_keep_refreshing_after_seven_days_and_only_when_counters_moved(
    make_campaign, org, audience_world
):
    from campaigns.completion import refresh_sent_stats
    from delivery.lifecycle import SendRef, send_transition

    campaign = make_campaign()
    send_and_drain(campaign, org)
    refresh_sent_stats()
    assert refresh_sent_stats() == 0  # nothing moved: nothing re-read
    Campaign.objects.filter(pk=campaign.pk).update(sent_at=timezone.now() - dt.timedelta(days=30))
    row = rows(campaign).first()
    send_transition(SendRef("campaign", str(row.pk)), "opened", {"at": timezone.now()})
    assert refresh_sent_stats() == 1
    campaign.refresh_from_db()
    assert campaign.stats_opened == 1


def test_creating_needs_the_campaigns_flag(org, template):
    from campaigns.services import CampaignError, campaign_create
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(feature_flags={"campaigns": False})
    with pytest.raises(CampaignError) as exc:
        campaign_create(
            organization_id=org.pk, actor="u", fields={"name": "x"}, authority=Authority.member("owner")
        )
    assert exc.value.category == "forbidden"
