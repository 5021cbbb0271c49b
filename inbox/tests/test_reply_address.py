"""Replies as a mailbox would send them: from the address the customer wrote to (on a verified domain of the
organization, else the default sender), to the message's Reply-To (for automatic replies only on the
authenticated From domain), threaded under the message."""

from __future__ import annotations

import pytest

from delivery.models import TransactionalSend
from inbox.sending import send_approved_reply
from owlat.models import Domain, DomainStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def desk(org):
    Domain.objects.filter(organization=org, domain="desk.test").delete()
    return Domain.objects.create(organization=org, domain="desk.test", status=DomainStatus.VERIFIED)


def _sent(make_message, **fields) -> TransactionalSend:
    values = {
        "approval_source": "human",
        "draft_response": "We have checked it.",
        "sender_authenticated": True,
    }
    m = make_message("approved", **{**values, **fields})
    assert send_approved_reply(m.pk).startswith("reply queued")
    return TransactionalSend.objects.get(inbound_message_id=m.pk)


def test_the_reply_comes_from_the_address_the_customer_wrote_to(desk, make_message, smtp_sink):
    reply = _sent(make_message, to=["support@desk.test"], message_id="<q1@example.com>", references="<q0@x>")
    assert reply.from_email == "support@desk.test" and reply.email == "jane@example.com"
    assert reply.extra_headers["In-Reply-To"] == "<q1@example.com>"
    assert reply.extra_headers["References"] == "<q0@x> <q1@example.com>"


def test_an_unverified_recipient_domain_falls_back_to_the_default_sender(desk, make_message, smtp_sink):
    Domain.objects.filter(pk=desk.pk).update(status=DomainStatus.PENDING)
    reply = _sent(make_message, to=["support@desk.test"])
    assert reply.from_email == "support@acme.test"


def test_reply_to_is_honoured_for_a_reviewed_reply(make_message, smtp_sink):
    reply = _sent(make_message, headers={"reply-to": "Jane at work <Jane.Work@Partner.example>"})
    assert reply.email == "jane.work@partner.example"


def test_an_automatic_reply_goes_to_reply_to_only_on_the_senders_domain(make_message, smtp_sink):
    foreign = _sent(make_message, approval_source="auto", headers={"reply-to": "collector@evil.test"})
    assert foreign.email == "jane@example.com"
    own = _sent(make_message, approval_source="auto", headers={"reply-to": "billing@eu.example.com"})
    assert own.email == "billing@eu.example.com"
