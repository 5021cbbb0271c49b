import pytest

from campaigns.services import CampaignError
from campaigns.testsend import MAX_TEST_RECIPIENTS, campaign_test_send
from owlat.permissions import Authority

SYSTEM = Authority.system("test")


@pytest.mark.django_db
def test_a_campaign_test_send_carries_the_campaigns_subject_and_sender_untracked(make_campaign):
    from delivery.models import EmailSend, LocalMessage, TransactionalSend
    from delivery.worker import dispatch_batch

    campaign = make_campaign(subject="Campaign subject", from_email="news@acme.test", from_name="Acme Weekly")
    sends = campaign_test_send(campaign=campaign, to=["a@example.com", "b@example.com"], authority=SYSTEM)
    dispatch_batch("transactional", [str(s.pk) for s in sends])
    assert TransactionalSend.objects.filter(kind="test", status="sent").count() == 2
    message = LocalMessage.objects.filter(to="a@example.com").get()
    assert message.subject == "[Test] Campaign subject"
    assert TransactionalSend.objects.filter(contact__isnull=False).count() == 0
    send = TransactionalSend.objects.get(email="a@example.com")
    assert send.from_email == "news@acme.test" and send.from_name == "Acme Weekly"
    # no campaign send rows, no counters
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()
    campaign.refresh_from_db()
    assert campaign.stats_sent == 0


@pytest.mark.django_db
def test_a_test_send_without_a_campaign_subject_uses_the_templates_marked(make_campaign):
    from delivery.models import TransactionalSend

    campaign = make_campaign(subject=None)
    sends = campaign_test_send(campaign=campaign, to=["a@example.com"], authority=SYSTEM)
    assert TransactionalSend.objects.get(pk=sends[0].pk).subject == "News for you"


@pytest.mark.django_db
def test_a_campaign_test_send_refuses_too_many_or_bad_addresses_naming_the_field(make_campaign):
    campaign = make_campaign()
    too_many = [f"p{i}@example.com" for i in range(MAX_TEST_RECIPIENTS + 1)]
    for to, message in ((too_many, "At most"), ([], "at least one"), (["nope"], "nope is not")):
        with pytest.raises(CampaignError, match=message) as err:
            campaign_test_send(campaign=campaign, to=to, authority=SYSTEM)
        assert err.value.field == "to"


@pytest.mark.django_db
def test_a_member_without_manage_may_not_test_send(make_campaign):
    campaign = make_campaign()
    with pytest.raises(CampaignError) as err:
        campaign_test_send(campaign=campaign, to=["a@example.com"], authority=Authority.member("viewer"))
    assert err.value.category == "forbidden"


@pytest.mark.django_db
def test_a_test_send_in_a_language_the_template_lacks_is_refused_naming_the_field(make_campaign):
    from campaigns.testsend import campaign_test_languages

    campaign = make_campaign()
    assert campaign_test_languages(campaign) == ["en", "de"]
    with pytest.raises(CampaignError, match="choose one of: en, de") as err:
        campaign_test_send(campaign=campaign, to=["a@example.com"], language="fr", authority=SYSTEM)
    assert err.value.field == "language"
