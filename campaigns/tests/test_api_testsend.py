"""`POST /campaigns/{id}/test-send`: the campaign as it would go to up to 5 addresses, through the test send
service the admin uses; 400 naming `to`, 403 without `campaigns:write`, 422 without a template."""

from __future__ import annotations

import pytest

from testsupport.api import ApiClient, make_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(org):
    _, raw = make_key(org, ["campaigns:read", "campaigns:write"])
    return ApiClient(raw)


def test_test_send_queues_one_untracked_test_per_address(api, make_campaign):
    from delivery.models import EmailSend, TransactionalSend

    campaign = make_campaign(subject="Hello", from_email=None, from_name=None)
    r = api.post(f"/campaigns/{campaign.pk}/test-send", {"to": ["a@example.com", "b@example.com"]})
    assert r.status_code == 202, r.content
    assert r.json()["data"] == {
        "recipients": ["a@example.com", "b@example.com"],
        "fromEmail": "news@acme.test",
        "fromName": "Acme News",
    }
    sends = TransactionalSend.objects.filter(kind="test")
    assert sorted(sends.values_list("email", flat=True)) == ["a@example.com", "b@example.com"]
    assert all(s.contact_id is None and s.subject == "Hello" for s in sends)
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()


def test_test_send_refuses_bad_input_naming_the_field(api, make_campaign):
    campaign = make_campaign()
    url = f"/campaigns/{campaign.pk}/test-send"
    for body in ({}, {"to": []}, {"to": ["nope"]}, {"to": [f"p{i}@example.com" for i in range(6)]}):
        r = api.post(url, body)
        assert r.status_code == 400, (body, r.content)
        assert "to" in str(r.json()["error"]["data"]), r.content
    r = api.post(url, {"to": ["a@example.com"], "variant": "C"})
    assert r.status_code == 400 and "variant" in str(r.json()["error"]["data"])


def test_test_send_needs_a_template_and_the_write_scope(org, api, make_campaign):
    campaign = make_campaign(email_template_id=None)
    r = api.post(f"/campaigns/{campaign.pk}/test-send", {"to": ["a@example.com"]})
    assert r.status_code == 422 and r.json()["error"]["data"]["reason"] == "no_template", r.content
    _, read_only = make_key(org, ["campaigns:read"])
    r = ApiClient(read_only).post(f"/campaigns/{campaign.pk}/test-send", {"to": ["a@example.com"]})
    assert r.status_code == 403
