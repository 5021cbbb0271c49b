"""API-17 erasure, delivery's part (issue 13 item 7): after `DELETE /contacts/{id}` the contact's send rows say
`[erased]`, are soft-deleted and no longer served, and their state stays consistent (unsent rows fail through
the send lifecycle; nothing is sent to an erased address)."""

from __future__ import annotations

import pytest

from delivery.erasure import ERASED
from delivery.lifecycle import SendRef, send_transition
from delivery.models import EmailSend, SendAttachment, TransactionalSend
from delivery.worker import dispatch_batch
from testsupport.api import ApiClient, make_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(org, settings):
    settings.API_RATE_LIMIT_PER_SECOND = settings.API_RATE_LIMIT_BURST = 10_000
    _, raw = make_key(
        org, scopes=["contacts:write", "contacts:read", "transactional:send", "transactional:read"]
    )
    return ApiClient(raw)


def test_delete_contact_erases_and_hides_its_send_rows(api, contact, make_tx_send, make_campaign_send):
    # Given a sent transactional row with an attachment, a queued one, and a sent campaign row
    sent = make_tx_send(contact=contact, data_variables={"name": "Jane"})
    send_transition(SendRef.of(sent), "sent", {"provider_message_id": "p-1", "provider_type": "smtp"})
    queued = make_tx_send(contact=contact)
    SendAttachment.objects.create(
        organization=contact.organization,
        send=queued,
        filename="a.txt",
        content=b"x",
        content_type="text/plain",
    )
    campaign_row = make_campaign_send(contact=contact)
    assert api.get(f"/transactional/{sent.pk}").status_code == 200

    # When the contact is erased through the API
    assert api.delete(f"/contacts/{contact.pk}").status_code == 200

    # Then no row carries the address or personal data, and none is served any more
    for row in (sent, queued):
        row.refresh_from_db()
        assert row.email == ERASED and row.deleted_at is not None and row.contact_id is None
        assert row.subject is None and row.html_body is None and row.data_variables is None
        assert api.get(f"/transactional/{row.pk}").status_code == 404
    campaign_row.refresh_from_db()
    assert campaign_row.contact_email == ERASED and campaign_row.deleted_at is not None
    assert campaign_row.contact_first_name is None
    assert not TransactionalSend.objects.filter(email=contact.email).exists()
    assert not EmailSend.objects.filter(contact_email=contact.email).exists()
    assert not SendAttachment.objects.exists()

    # And the state is consistent: what was sent stays sent; what was never handed off failed (not left queued)
    assert sent.status == "sent"
    assert (queued.status, queued.error_code) == ("failed", "CONTACT_ERASED")
    assert (campaign_row.status, campaign_row.error_code) == ("failed", "CONTACT_ERASED")


def test_an_erased_queued_row_is_never_sent(contact, make_tx_send, smtp_sink, settings):
    from owlat.contacts import contact_erase

    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    row = make_tx_send(contact=contact)
    contact_erase(contact=contact, actor="test")
    dispatch_batch("transactional", [str(row.pk)])
    assert smtp_sink.messages == []
    row.refresh_from_db()
    assert row.status == "failed"


def test_a_handed_off_row_keeps_its_unknown_outcome(contact, make_tx_send):
    from django.utils import timezone

    from owlat.contacts import contact_erase

    row = make_tx_send(contact=contact)
    TransactionalSend.objects.filter(pk=row.pk).update(handed_off_at=timezone.now(), outcome_unknown=True)
    contact_erase(contact=contact, actor="test")
    row.refresh_from_db()
    assert row.status == "queued" and row.outcome_unknown and row.email == ERASED
