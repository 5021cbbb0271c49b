import pytest

from owlat.apikeys import InvalidScopes, api_key_authenticate, api_key_create, api_key_revoke, hash_key
from owlat.flags import feature_disabled_message, flag_enabled, resolve_flags
from owlat.models import BlockedEmail, OrganizationSettings
from owlat.permissions import has_permission
from owlat.suppression import is_suppressed, suppress, unsuppress
from owlat.tests.factories import make_org


def test_permission_map():
    assert has_permission("editor", "campaigns:send")
    assert not has_permission("editor", "automations:manage")
    assert has_permission("admin", "automations:manage")
    assert not has_permission("admin", "organization:delete")
    assert has_permission("owner", "organization:delete")
    assert not has_permission(None, "emails:test")


def test_flags_default_on_except_ai_and_respect_requirements():
    flags = resolve_flags({})
    assert flags["automations"] and flags["inbox"] and flags["campaigns"]
    assert not flags["ai"] and not flags["ai.agent"]
    assert not resolve_flags({"campaigns": False})["campaigns.archive"]
    assert feature_disabled_message("automations") == (
        'Feature "automations" is disabled on this Owlat instance. An admin can enable it from Settings → Features.'
    )


@pytest.mark.django_db
def test_flag_enabled_reads_organization_settings():
    org = make_org()
    assert flag_enabled(org.pk, "automations")
    OrganizationSettings.objects.filter(organization=org).update(feature_flags={"automations": False})
    assert not flag_enabled(org.pk, "automations")


@pytest.mark.django_db
def test_api_key_is_shown_once_and_stored_hashed():
    org = make_org()
    key, raw = api_key_create(organization_id=org.pk, name="k", scopes=["contacts:read"])
    assert raw.startswith("lm_live_") and len(raw) == 40
    assert key.key_hash == hash_key(raw) and raw not in key.key_hash and key.key_prefix == raw[:16]
    assert api_key_authenticate(raw) == key
    assert api_key_authenticate(raw + "x") is None
    assert api_key_revoke(api_key_id=key.pk, organization_id=org.pk)
    assert api_key_authenticate(raw) is None
    with pytest.raises(InvalidScopes):
        api_key_create(organization_id=org.pk, name="k", scopes=[])
    with pytest.raises(InvalidScopes):
        api_key_create(organization_id=org.pk, name="k", scopes=["nope"])


@pytest.mark.django_db
def test_suppression_upgrades_and_scopes():
    org = make_org()
    suppress(organization_id=org.pk, email="U@example.com", reason="unengaged")
    assert is_suppressed(organization_id=org.pk, email="u@example.com")
    assert not is_suppressed(organization_id=org.pk, email="u@example.com", scope="transactional")
    row = suppress(organization_id=org.pk, email="u@example.com", reason="bounced", bounce_type="soft")
    assert (row.reason, row.bounce_type) == ("bounced", "soft")
    row = suppress(organization_id=org.pk, email="u@example.com", reason="bounced", bounce_type="hard")
    assert row.bounce_type == "hard"
    assert BlockedEmail.objects.filter(organization=org).count() == 1
    assert is_suppressed(organization_id=org.pk, email="u@example.com", scope="transactional")
    other = make_org()
    assert not is_suppressed(organization_id=other.pk, email="u@example.com")
    assert unsuppress(organization_id=org.pk, email="u@example.com")
    assert not is_suppressed(organization_id=org.pk, email="u@example.com")
