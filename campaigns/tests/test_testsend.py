import pytest

from campaigns.testsend import MAX_TEST_RECIPIENTS, campaign_test_send


@pytest.mark.django_db
def test_a_campaign_test_send_carries_the_campaigns_subject_and_sender_untracked(make_campaign):
    from delivery.models import LocalMessage, TransactionalSend
    from delivery.worker import dispatch_batch

    campaign = make_campaign(subject="Campaign subject", from_email="news@acme.test", from_name="Acme Weekly")
    sends = campaign_test_send(campaign=campaign, to=["a@example.com", "b@example.com"])
    dispatch_batch("transactional", [str(s.pk) for s in sends])
    assert TransactionalSend.objects.filter(kind="test", status="sent").count() == 2
    message = LocalMessage.objects.filter(to="a@example.com").get()
    assert "Campaign subject" in message.subject
    assert TransactionalSend.objects.filter(contact__isnull=False).count() == 0
    send = TransactionalSend.objects.get(email="a@example.com")
    assert send.from_email == "news@acme.test" and send.from_name == "Acme Weekly"


@pytest.mark.django_db
def test_a_campaign_test_send_refuses_too_many_or_bad_addresses_naming_the_field(make_campaign):
    campaign = make_campaign()
    with pytest.raises(ValueError, match="to:"):
        campaign_test_send(
            campaign=campaign, to=[f"p{i}@example.com" for i in range(MAX_TEST_RECIPIENTS + 1)]
        )
    with pytest.raises(ValueError, match="to:"):
        campaign_test_send(campaign=campaign, to=[])
    with pytest.raises(ValueError, match="to: nope"):
        campaign_test_send(campaign=campaign, to=["nope"])
