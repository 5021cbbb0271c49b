"""Delivery admin screens and operator commands (reap_stuck_sends, resend_unknown, backfill_send_counters,
send_test_email)."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from delivery.lifecycle import SendRef, send_transition
from delivery.models import CampaignSendCounters, EmailSend, LocalMessage, TransactionalSend
from delivery.services import campaign_counters
from owlat.models import Membership
from testsupport import queued_tasks


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_backfill_is_a_dry_run_unless_apply(make_campaign_send, campaign_id):
    sends = [make_campaign_send() for _ in range(3)]
    send_transition(SendRef.of(sends[0]), "sent")
    send_transition(SendRef.of(sends[0]), "opened")
    send_transition(SendRef.of(sends[1]), "sent")
    send_transition(SendRef.of(sends[1]), "bounced", {"bounce_type": "soft"})
    CampaignSendCounters.objects.filter(campaign_id=campaign_id).update(sent=0, opened=7, soft_bounced=0)
    output = run("backfill_send_counters", "--batch-size", "2")
    assert "sent 0 -> 2" in output and "opened 7 -> 1" in output and "dry run" in output
    assert campaign_counters(campaign_id)["opened"] == 7
    output = run("backfill_send_counters", "--apply")
    counters = campaign_counters(campaign_id)
    assert (
        counters["sent"],
        counters["opened"],
        counters["delivered"],
        counters["bounced"],
        counters["soft_bounced"],
    ) == (
        2,
        1,
        1,
        1,
        1,
    )
    assert "1 counter set(s) differ" in output
    # re-running finds nothing to change
    assert "0 counter set(s) differ" in run("backfill_send_counters", "--apply")


@pytest.mark.django_db
def test_reap_stuck_sends_reports_then_resolves(make_campaign_send, make_tx_send, settings):
    settings.EMAIL_PROVIDER = "local"
    long_ago = timezone.now() - dt.timedelta(minutes=10)
    orphan = make_campaign_send()
    EmailSend.objects.filter(pk=orphan.pk).update(queued_at=long_ago)
    lost = make_tx_send()
    TransactionalSend.objects.filter(pk=lost.pk).update(claimed_at=long_ago, handed_off_at=long_ago)
    expired = make_tx_send()
    TransactionalSend.objects.filter(pk=expired.pk).update(
        claimed_at=long_ago, handed_off_at=timezone.now() - dt.timedelta(hours=25), outcome_unknown=True
    )
    output = run("reap_stuck_sends")
    assert "campaign: 1 orphaned" in output
    assert "transactional: 0 orphaned (never handed off; re-driven), 1 handed off without result" in output
    assert "1 outcome-unknown for 24 h" in output and "dry run" in output
    assert queued_tasks() == []
    run("reap_stuck_sends", "--apply")
    assert [(t.queue, t.args) for t in queued_tasks()] == [("campaign", ("campaign", [str(orphan.pk)]))]
    lost.refresh_from_db()
    expired.refresh_from_db()
    assert lost.status == "queued" and lost.outcome_unknown
    assert expired.status == "failed" and expired.error_code == "PROVIDER_ACCEPTANCE_UNCONFIRMED"


@pytest.mark.django_db
def test_resend_unknown_is_explicit(make_tx_send):
    send = make_tx_send()
    TransactionalSend.objects.filter(pk=send.pk).update(handed_off_at=timezone.now(), outcome_unknown=True)
    output = run("resend_unknown")
    assert f"transactional {send.pk}" in output and "list only" in output
    assert queued_tasks() == []
    run("resend_unknown", "--apply")
    send.refresh_from_db()
    assert not send.outcome_unknown and send.handed_off_at is None
    assert [t.args for t in queued_tasks("transactional")] == [("transactional", [str(send.pk)])]


@pytest.mark.django_db
def test_send_test_email_through_the_local_provider(org, template, settings):
    settings.EMAIL_PROVIDER = "local"
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    output = run(
        "send_test_email", "me@example.com", "--organization", "Acme", "--template", str(template.pk), "--now"
    )
    assert "status sent" in output
    message = LocalMessage.objects.get()
    assert message.to == "me@example.com" and message.subject == "[Test] Hello friend"
    send = TransactionalSend.objects.get()
    assert send.kind == "test" and send.status == "sent"


@pytest.fixture
def owner_client(client, org, django_user_model):
    user = django_user_model.objects.create_user(username="owner", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


@pytest.fixture
def root_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    return client


@pytest.mark.django_db
def test_admin_send_rows_timeline_and_provider_status(root_client, make_campaign_send, settings):
    settings.EMAIL_PROVIDER = ""
    send = make_campaign_send()
    send_transition(SendRef.of(send), "sent", {"provider_message_id": "pm-9", "provider_type": "smtp"})
    send_transition(SendRef.of(send), "clicked", {"url": "https://example.org/t"})
    r = root_client.get("/admin/delivery/emailsend/")
    assert r.status_code == 200 and send.contact_email.encode() in r.content
    assert b"No delivery provider configured" in r.content
    r = root_client.get(f"/admin/delivery/emailsend/?status=clicked&campaign={send.campaign_id}")
    assert r.status_code == 200 and send.contact_email.encode() in r.content
    r = root_client.get(f"/admin/delivery/emailsend/{send.pk}/change/")
    assert r.status_code == 200
    for text in (b"Queued", b"Accepted by the provider (sent)", b"pm-9", b"https://example.org/t"):
        assert text in r.content
    r = root_client.get("/admin/delivery/emailsend/provider-status/")
    assert r.status_code == 200 and b"EMAIL_PROVIDER is not set" in r.content


@pytest.mark.django_db
def test_admin_resend_action_and_local_messages(owner_client, make_tx_send, org, settings):
    settings.EMAIL_PROVIDER = "local"
    send = make_tx_send()
    TransactionalSend.objects.filter(pk=send.pk).update(handed_off_at=timezone.now(), outcome_unknown=True)
    r = owner_client.post(
        "/admin/delivery/transactionalsend/",
        {"action": "resend_unknown", "_selected_action": [str(send.pk)]},
        follow=True,
    )
    assert r.status_code == 200 and b"Re-sending 1 outcome-unknown row(s)." in r.content
    LocalMessage.objects.create(
        organization=org,
        message_id="<x@y>",
        from_email="a@acme.test",
        to="b@example.com",
        subject="Hello local",
        html="<p>x</p>",
    )
    r = owner_client.get("/admin/delivery/localmessage/")
    assert r.status_code == 200 and b"Hello local" in r.content


@pytest.mark.django_db
def test_admin_members_see_only_their_organization(owner_client, other_org, make_tx_send):
    from owlat.models import Contact

    mine = make_tx_send()
    theirs_contact = Contact.objects.create(organization=other_org, email="z@other.test")
    theirs = TransactionalSend.objects.create(
        organization=other_org, kind="transactional", contact=theirs_contact, email="z@other.test"
    )
    r = owner_client.get("/admin/delivery/transactionalsend/")
    assert mine.email.encode() in r.content and b"z@other.test" not in r.content
    assert owner_client.get(f"/admin/delivery/transactionalsend/{theirs.pk}/change/").status_code in (
        302,
        403,
        404,
    )
