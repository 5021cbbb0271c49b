"""Fixtures the kernel's API tests share: an organization, an API key with the kernel's scopes, and a client
that calls the API as the SDKs do. A module defines its own `org`, `key` or `api` where it needs another."""

import pytest

from testsupport.api import ApiClient, make_key, make_org


@pytest.fixture
def org():
    return make_org("Org A")


@pytest.fixture
def key(org):
    return make_key(org)


@pytest.fixture
def api(key):
    return ApiClient(key[1])
