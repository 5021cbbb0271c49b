"""Issue 11 item 4 over the API: an automation's unsubscribe-footer and tracking switches, set on create and
update and returned with the automation (the admin form has had them; integrators need them too)."""

from __future__ import annotations

import pytest

from automations.models import Automation
from testsupport.api import ApiClient, error_of, make_key


@pytest.fixture
def api(org, settings):
    settings.API_RATE_LIMIT_PER_SECOND = 10_000
    settings.API_RATE_LIMIT_BURST = 10_000
    _, raw = make_key(org, scopes=["automations:read", "automations:write"])
    return ApiClient(raw)


def _create(api, **extra):
    return api.post(
        "/automations",
        {"name": "Welcome", "triggerType": "contact_created", **extra},
    )


def test_defaults_footer_on_tracking_off(api):
    r = _create(api)
    assert r.status_code == 201, r.content
    data = r.json()["data"]
    assert (data["unsubscribeFooter"], data["trackEngagement"]) == (True, False)
    row = Automation.objects.get(pk=data["id"])
    assert (row.unsubscribe_footer, row.track_engagement) == (True, False)


def test_set_on_create_and_changed_by_update_in_any_state(api):
    r = _create(api, unsubscribeFooter=False, trackEngagement=True)
    assert r.status_code == 201, r.content
    automation_id = r.json()["data"]["id"]
    row = Automation.objects.get(pk=automation_id)
    assert (row.unsubscribe_footer, row.track_engagement) == (False, True)

    r = api.patch(f"/automations/{automation_id}", {"unsubscribeFooter": True})
    assert r.status_code == 200, r.content
    assert (r.json()["data"]["unsubscribeFooter"], r.json()["data"]["trackEngagement"]) == (True, True)
    row.refresh_from_db()
    assert (row.unsubscribe_footer, row.track_engagement) == (True, True)

    r = api.get(f"/automations/{automation_id}")
    assert r.json()["data"]["unsubscribeFooter"] is True


@pytest.mark.parametrize("field", ["unsubscribeFooter", "trackEngagement"])
@pytest.mark.parametrize("value", ["yes", 1, "false", []])
def test_non_boolean_is_a_400_naming_the_field(api, field, value):
    r = _create(api, **{field: value})
    assert r.status_code == 400
    assert field in (error_of(r).get("field") or "") or field in error_of(r)["message"]
    assert not Automation.objects.exists()


def test_null_means_absent(api):
    """api.md: an optional field sent as null means absent, so the defaults apply."""
    r = _create(api, unsubscribeFooter=None, trackEngagement=None)
    assert r.status_code == 201, r.content
    assert (r.json()["data"]["unsubscribeFooter"], r.json()["data"]["trackEngagement"]) == (True, False)
