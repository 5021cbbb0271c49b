"""`manage.py bootstrap` / `owlat.demo`: demo organization, superuser owner, API key, sample data; idempotent."""

import json
import os
import stat
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from owlat.apikeys import SCOPES, api_key_authenticate, hash_key
from owlat.conditions import filters_count
from owlat.demo import (
    DEMO_DOMAIN,
    DEMO_SENDER_EMAIL,
    DEMO_SENDER_NAME,
    NEWSLETTER_TOPIC,
    PRO_SEGMENT,
    UPDATES_TOPIC,
    bootstrap,
    bootstrap_report,
)
from owlat.models import (
    ApiKey,
    Contact,
    ContactTopic,
    DoiStatus,
    Domain,
    Membership,
    Organization,
    Segment,
    Topic,
)

pytestmark = pytest.mark.django_db


def test_bootstrap_creates_org_settings_domain_superuser_owner_and_key(settings):
    settings.SITE_URL = "http://owlat.test:9000"
    result = bootstrap(password="s3cret-pass")
    org = Organization.objects.get(name="Demo")
    assert result.organization == org and result.organization_created
    assert org.settings.default_from_email == DEMO_SENDER_EMAIL == "hello@demo.owlat.local"
    assert org.settings.default_from_name == DEMO_SENDER_NAME == "Owlat Demo"
    assert org.settings.feature_flags["campaigns"] is True
    domain = Domain.objects.get(organization=org)
    assert domain.domain == DEMO_DOMAIN and domain.status == "verified" and domain.last_verified_at
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.is_staff and user.check_password("s3cret-pass")
    assert Membership.objects.get(user=user, organization=org).role == "owner"
    # DOM-03 key format, SHA-256 hash, 16-char prefix, every scope
    raw = result.raw_api_key
    assert raw.startswith("lm_live_") and len(raw) == 40 and raw[8:].isalnum()
    key = ApiKey.objects.get(organization=org)
    assert key.key_hash == hash_key(raw) and key.key_prefix == raw[:16]
    assert set(key.scopes) == set(SCOPES)
    assert api_key_authenticate(raw) == key
    assert result.admin_url == "http://owlat.test:9000/admin/"
    text = bootstrap_report(result)
    assert "http://owlat.test:9000/admin/" in text and raw in text and "s3cret-pass" in text


def test_generated_password_and_rerun_is_idempotent():
    first = bootstrap()
    assert first.user_created and len(first.password) >= 12
    user = get_user_model().objects.get(username="admin")
    assert user.check_password(first.password)

    second = bootstrap()
    assert not second.organization_created and not second.user_created and not second.api_key_created
    assert second.password is None and second.raw_api_key is None
    assert Organization.objects.count() == 1 and ApiKey.objects.count() == 1
    assert Membership.objects.count() == 1 and Domain.objects.count() == 1
    user.refresh_from_db()
    assert user.check_password(first.password)  # not reset
    text = bootstrap_report(second)
    assert "exists" in text and "create_api_key" in text and first.raw_api_key not in text

    third = bootstrap(password="new-password-1")
    assert third.password == "new-password-1"
    user.refresh_from_db()
    assert user.check_password("new-password-1")


def test_revoked_key_is_replaced():
    first = bootstrap()
    ApiKey.objects.update(is_active=False)
    second = bootstrap()
    assert second.api_key_created and second.raw_api_key != first.raw_api_key
    assert ApiKey.objects.filter(is_active=True).count() == 1


def test_demo_data_contacts_topics_segment():
    result = bootstrap(demo=True)
    org = result.organization
    demo = result.demo
    assert demo.contacts_created == 5 and demo.contacts_total == 5
    newsletter = Topic.objects.get(organization=org, name=NEWSLETTER_TOPIC)
    updates = Topic.objects.get(organization=org, name=UPDATES_TOPIC)
    assert newsletter.require_double_opt_in and not updates.require_double_opt_in
    assert ContactTopic.objects.filter(topic=updates, pending_doi_confirmation=False).count() == 5
    assert ContactTopic.objects.filter(topic=newsletter, pending_doi_confirmation=False).count() == 3
    pending = ContactTopic.objects.get(topic=newsletter, pending_doi_confirmation=True)
    assert pending.contact.email == "katherine@example.com"
    assert pending.contact.doi_status == DoiStatus.PENDING
    assert Contact.objects.get(email="ada@example.com").doi_status == DoiStatus.CONFIRMED
    newsletter.refresh_from_db()
    assert newsletter.cached_member_count == 4
    segment = Segment.objects.get(organization=org, name=PRO_SEGMENT)
    assert segment.cached_count == 2 == filters_count(org.pk, segment.filters)

    again = bootstrap(demo=True)
    assert again.demo.contacts_created == 0
    assert Contact.objects.count() == 5 and Topic.objects.count() == 2 and Segment.objects.count() == 1
    assert set(again.demo.subscriptions.values()) == {"already_member"}
    assert ContactTopic.objects.count() == 9


def test_credentials_file_shows_working_secrets_again(tmp_path):
    path = tmp_path / "var" / "credentials.json"
    first = bootstrap(credentials_file=path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text()) == {
        "username": "admin",
        "password": first.password,
        "api_key": first.raw_api_key,
    }
    second = bootstrap(credentials_file=path)
    assert not second.api_key_created
    assert second.password == first.password and second.raw_api_key == first.raw_api_key
    assert "read back" in bootstrap_report(second, credentials_file=str(path))

    # stale secrets are not shown: a changed password and a revoked key
    user = get_user_model().objects.get(username="admin")
    user.set_password("changed-elsewhere")
    user.save()
    ApiKey.objects.update(is_active=False)
    third = bootstrap(credentials_file=path)
    assert third.password is None
    assert third.api_key_created and third.raw_api_key != first.raw_api_key
    assert json.loads(path.read_text()) == {"username": "admin", "api_key": third.raw_api_key}


def test_command_prints_admin_url_login_and_key():
    out = StringIO()
    call_command("bootstrap", "--demo", "--password", "pw-123456", stdout=out)
    text = out.getvalue()
    key = ApiKey.objects.get()
    assert "/admin/" in text and "admin" in text and "pw-123456" in text
    raw = next(word for word in text.split() if word.startswith("lm_live_"))
    assert hash_key(raw) == key.key_hash
    out = StringIO()
    call_command("bootstrap", stdout=out)
    assert "lm_live_" not in out.getvalue().replace(key.key_prefix, "")
    assert "create_api_key" in out.getvalue()
    # the hint is a working command
    import shlex

    hint = next(line for line in out.getvalue().splitlines() if "manage.py create_api_key" in line)
    args = shlex.split(hint.split("manage.py ", 1)[1])
    call_command(*args, stdout=StringIO())
    assert ApiKey.objects.filter(name="Another key", organization=key.organization).count() == 1
