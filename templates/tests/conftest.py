"""Fixtures of the templates tests: an organization and an admin client logged in as its owner."""

from __future__ import annotations

import pytest

from testsupport.api import make_org


@pytest.fixture
def org(db):
    return make_org(default_from_email="hi@acme.test")


@pytest.fixture
def admin_client(client, org, django_user_model):
    from owlat.models import Membership

    user = django_user_model.objects.create_user(
        username="o", password="pw", is_staff=True, email="o@acme.test"
    )
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client
