"""The DRF classes of `/api/v1` in isolation: authentication, permissions, throttle, pagination, parser."""

import json
import time

import pytest
from django.test import RequestFactory
from rest_framework import exceptions
from rest_framework.request import Request

from owlat.api.authentication import ApiKeyAuthentication
from owlat.api.pagination import KeysetPagination
from owlat.api.parsers import JSONObjectParser
from owlat.api.permissions import FeatureFlagEnabled, HasScope
from owlat.api.throttling import ApiKeyRateThrottle, rate_state
from owlat.models import Contact, OrganizationSettings, RateBucket
from testsupport.api import make_key, make_org

pytestmark = pytest.mark.django_db
MISSING = "Missing or invalid Authorization header. Use: Authorization: Bearer <api_key>"


def drf_request(method="get", path="/api/v1/x", authorization=None, **extra):
    headers = {"Authorization": authorization} if authorization is not None else {}
    return Request(getattr(RequestFactory(), method)(path, headers=headers, **extra))


class View:
    required_scopes = {"GET": "contacts:read", "POST": "contacts:write"}
    feature_flag = None


@pytest.fixture
def org():
    return make_org("Org A")


# --- authentication -------------------------------------------------------------------------------------------


def test_authentication_returns_the_key_as_user_and_auth(org):
    key, raw = make_key(org)
    for header in (f"Bearer {raw}", f"bearer {raw}", raw):
        user, auth = ApiKeyAuthentication().authenticate(drf_request(authorization=header))
        assert user == auth == key


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, MISSING),
        ("Basic dXNlcjpwYXNz", MISSING),
        ("Bearer lm_live_short", "Invalid API key format"),
        ("Bearer lm_live_" + "Z" * 32, "Invalid API key"),
    ],
)
def test_authentication_failures_are_authentication_failed_with_the_message(org, header, message):
    with pytest.raises(exceptions.AuthenticationFailed) as info:
        ApiKeyAuthentication().authenticate(drf_request(authorization=header))
    assert str(info.value.detail) == message


def test_authenticate_header_makes_a_401_with_www_authenticate():
    assert ApiKeyAuthentication().authenticate_header(drf_request()) == "Bearer"


# --- permissions ----------------------------------------------------------------------------------------------


def _authed(key, method="get"):
    request = drf_request(method)
    request.user = request.auth = None
    request._user, request._auth = key, key
    return request


def test_has_scope_needs_the_methods_scope_and_head_uses_gets(org):
    key, _ = make_key(org, scopes=["contacts:read"])
    permission = HasScope()
    assert permission.has_permission(_authed(key, "get"), View())
    assert permission.has_permission(_authed(key, "head"), View())
    assert not permission.has_permission(_authed(key, "post"), View())
    assert permission.message == "This API key is missing the required scope: contacts:write"


def test_has_scope_fails_closed_for_an_undeclared_method(org):
    key, _ = make_key(org)
    with pytest.raises(RuntimeError):
        HasScope().has_permission(_authed(key, "delete"), View())


def test_feature_flag_permission_reads_the_organizations_flag(org):
    key, _ = make_key(org)
    view = View()
    view.feature_flag = "automations"
    permission = FeatureFlagEnabled()
    assert permission.has_permission(_authed(key), view)
    OrganizationSettings.objects.filter(organization=org).update(feature_flags={"automations": False})
    assert not permission.has_permission(_authed(key), view)
    assert permission.message.startswith('Feature "automations" is disabled')
    view.feature_flag = None
    assert permission.has_permission(_authed(key), view)


# --- throttle -------------------------------------------------------------------------------------------------


def test_throttle_takes_from_the_keys_bucket_and_records_the_state(org):
    key, _ = make_key(org)
    throttle = ApiKeyRateThrottle()
    request = _authed(key)
    assert throttle.allow_request(request, View())
    state = rate_state(request)
    assert state.allowed and state.limit == 10 and state.remaining == 14
    RateBucket.objects.filter(key=f"api:{key.pk}").update(tokens=0.0, updated_at=time.time() + 5)
    refused = ApiKeyRateThrottle()
    assert not refused.allow_request(_authed(key), View())
    assert refused.wait() >= 1


def test_throttle_lets_public_requests_through():
    request = drf_request()
    request._user = request._auth = None
    assert ApiKeyRateThrottle().allow_request(request, View())
    assert rate_state(request) is None


# --- pagination -----------------------------------------------------------------------------------------------


def test_keyset_pagination_walks_every_row_once(org):
    key, _ = make_key(org)
    for index in range(7):
        Contact.objects.create(organization=org, email=f"c{index}@example.com")
    view = View()
    view.ordering, view.list_key = ("-created_at", "-id"), "contacts"
    seen, cursor = [], None
    while True:
        paginator = KeysetPagination()
        query = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        request = Request(RequestFactory().get("/api/v1/contacts", query))
        request._user = request._auth = key
        page = paginator.paginate_queryset(Contact.objects.filter(organization=org), request, view)
        body = paginator.get_paginated_response([str(c.pk) for c in page]).data
        seen += body["data"]
        assert body["pagination"]["totalItems"] == 7 and body["pagination"]["limit"] == 3
        cursor = body["pagination"]["cursor"]
        if body["pagination"]["isDone"]:
            assert cursor is None
            break
    assert len(seen) == len(set(seen)) == 7


def test_keyset_pagination_refuses_a_bad_limit_or_foreign_cursor(org):
    from owlat.api.errors import ApiError

    key, _ = make_key(org)
    view = View()
    for query, field in (({"limit": "0"}, "limit"), ({"cursor": "forged"}, "cursor")):
        request = Request(RequestFactory().get("/api/v1/contacts", query))
        request._user = request._auth = key
        with pytest.raises(ApiError) as info:
            KeysetPagination().paginate_queryset(Contact.objects.none(), request, view)
        assert info.value.data["field"] == field


def test_pagination_schema_wraps_the_items():
    schema = KeysetPagination().get_paginated_response_schema({"type": "array"})
    assert schema["properties"]["data"] == {"type": "array"}
    assert set(schema["properties"]["pagination"]["properties"]) == {
        "limit",
        "totalItems",
        "cursor",
        "isDone",
    }
    assert {p["name"] for p in KeysetPagination().get_schema_operation_parameters(None)} == {
        "limit",
        "cursor",
    }


# --- parser ---------------------------------------------------------------------------------------------------


def _parse(raw: bytes):
    import io

    return JSONObjectParser().parse(io.BytesIO(raw))


def test_parser_drops_top_level_nulls_and_refuses_non_objects():
    from owlat.api.errors import ApiError

    assert _parse(b'{"a": 1, "b": null}') == {"a": 1}
    for raw in (b"[1]", b"null", b"   ", b"\xff", b'{"a": ', b"[" * 5000 + b"]" * 5000):
        with pytest.raises(ApiError) as info:
            _parse(raw)
        assert info.value.message == "Invalid JSON in request body"


def test_parser_keeps_nan_for_the_field_to_refuse():
    value = _parse(json.dumps({"x": float("nan")}).encode())
    assert value["x"] != value["x"]


def test_unused_helpers_are_gone():
    import owlat.api.base as base
    import owlat.api.serializers as serializers

    for name in ("api_route", "body", "paginated"):
        assert not hasattr(base.ApiView, name) and not hasattr(base, name)
    for name in ("contact_data", "topic_data", "segment_data", "topic_member_data"):
        assert not hasattr(serializers, name)
