"""Admin test support: the fixture `staff_owner`, a staff user owning the test's organization and logged in on
the test client (the admin pages' usual visitor)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def staff_owner(client, django_user_model, org) -> Any:
    """A staff user "olga", owner of `org` (the module's or conftest's own fixture), logged in on `client`."""
    from owlat.models import Membership

    user = django_user_model.objects.create_user(username="olga", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return user
