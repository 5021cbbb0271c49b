"""The `/api/v1` framework: envelope, authentication, rate limit, scopes, flags, bodies, routing, CORS (API-01…08, 12)."""

import datetime as dt
import json
import time

import pytest
from django.test import Client, override_settings
from django.urls import include, path
from django.utils import timezone

from owlat.api import auth
from owlat.api.auth import take_request_token
from owlat.api.base import ApiView, iso, outcome_error, transition_object
from owlat.api.errors import ApiError, exception_handler, invalid_input
from owlat.lifecycle import Outcome
from owlat.models import ApiKey, Contact, RateBucket
from testsupport.api import ApiClient, error_of, make_key, refill_bucket

MISSING = "Missing or invalid Authorization header. Use: Authorization: Bearer <api_key>"


# --- test-only views mounted next to the real API ----------------------------------------------------------


class FlaggedView(ApiView):
    required_scopes = {"GET": "contacts:read"}
    feature_flag = "automations"

    def get(self, request):
        return self.ok({"flag": "on"})


class BoomView(ApiView):
    required_scopes = {"GET": "contacts:write", "POST": "contacts:write"}
    empty_body_methods = frozenset({"POST"})

    def get(self, request):
        raise RuntimeError("secret internal detail")

    def post(self, request):
        # writes a row, then fails: the 5xx must roll the write back
        Contact.objects.create(organization_id=self.organization_id, email="rolled-back@example.com")
        raise RuntimeError("secret internal detail")


class RefusedAfterWriteView(ApiView):
    required_scopes = {"POST": "contacts:write"}
    empty_body_methods = frozenset({"POST"})

    def post(self, request):
        # writes a row, then refuses: a 4xx must roll the write back too (with or without Idempotency-Key)
        Contact.objects.create(organization_id=self.organization_id, email="refused@example.com")
        raise ApiError("invalid_state", "refused after a write", {"reason": "refused"})


class TransitionView(ApiView):
    required_scopes = {"POST": "contacts:write"}
    empty_body_methods = frozenset({"POST"})

    def post(self, request):
        body = request.data
        outcome = Outcome(
            ok=body.get("ok", False),
            applied="transitioned" if body.get("ok") else None,
            reason=body.get("reason"),
            message=body.get("message"),
            from_state="draft",
            to_state="active",
        )
        return self.transitioned({"id": "x1"}, outcome)


class EchoView(ApiView):
    required_scopes = {"POST": "contacts:write", "PUT": "contacts:write"}

    def post(self, request):
        return self.created({"body": request.data})

    def put(self, request):
        return self.ok({"body": request.data})


probed: dict = {}


class ProbeView(ApiView):
    required_scopes = {"GET": "contacts:read"}

    def get(self, request):
        django_request = request._request
        probed.update(
            session=hasattr(django_request, "session"),
            messages=hasattr(django_request, "_messages"),
            tenancy=django_request.tenancy,
            user=django_request.user,
        )
        return self.ok({})


def plain_django_crash(request):
    raise RuntimeError("secret internal detail")


urlpatterns = [
    path(
        "api/v1/",
        include(
            [
                path("_test/flagged", FlaggedView.as_view()),
                path("_test/boom", BoomView.as_view()),
                path("_test/refused", RefusedAfterWriteView.as_view()),
                path("_test/transition", TransitionView.as_view()),
                path("_test/echo", EchoView.as_view()),
                path("_test/probe", ProbeView.as_view()),
                path("_test/plain-crash", plain_django_crash),
                # declared the plain Django way, with a required trailing slash / without one
                path("_test/strict-slash/", EchoView.as_view()),
                path("_test/no-slash", EchoView.as_view()),
            ]
        ),
    ),
    path("", include("owlat.urls")),
]

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


# --- envelope and exception handler --------------------------------------------------------------------------


def test_iso_has_milliseconds_and_z():
    value = dt.datetime(2026, 2, 17, 15, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert iso(value) == "2026-02-17T14:00:00.123Z"
    assert iso(None) is None


def test_api_error_categories_map_to_dom04_statuses():
    assert ApiError("invalid_input", "x").status == 400
    assert ApiError("limit_reached", "x").status == 402
    assert ApiError("conflict", "x").status == 409
    assert ApiError("invalid_state", "x").status == 422
    with pytest.raises(ValueError):
        ApiError("nonsense", "x")


def test_exception_handler_turns_drf_errors_into_the_envelope():
    from rest_framework import exceptions

    response = exception_handler(exceptions.ParseError("boom"), {})
    assert response.status_code == 400
    assert response.data == {
        "error": {"category": "invalid_input", "message": "Invalid JSON in request body"}
    }
    response = exception_handler(
        exceptions.ValidationError({"steps": [{}, {}, {"config": {"unit": ["bad unit"]}}]})
    )
    assert response.data["error"]["message"] == "bad unit"
    assert response.data["error"]["data"]["field"] == "steps[2].config.unit"
    assert response.data["error"]["data"]["fields"] == {"steps[2].config.unit": ["bad unit"]}
    response = exception_handler(exceptions.NotFound(), {})
    assert response.status_code == 404
    assert response.data["error"] == {"category": "not_found", "message": "Not found"}
    response = exception_handler(KeyError("secret"), {})
    assert response.status_code == 500
    assert response.data == {"error": {"category": "internal", "message": "Internal server error"}}


def test_invalid_input_with_field_adds_field_and_fields():
    err = invalid_input("name is required", field="name")
    assert err.data == {"field": "name", "fields": {"name": ["name is required"]}}


def test_outcome_error_maps_lifecycle_refusals():
    refused = Outcome(
        ok=False, reason="no_steps", message="Add steps first", from_state="draft", to_state="active"
    )
    err = outcome_error(refused)
    assert (err.status, err.category, err.message) == (422, "invalid_state", "Add steps first")
    assert err.data == {"reason": "no_steps", "from": "draft", "to": "active"}
    missing = outcome_error(Outcome(ok=False, reason="automation_not_found", message="Automation not found"))
    assert (missing.status, missing.category, missing.message) == (404, "not_found", "Automation not found")
    done = Outcome(ok=True, applied="recorded", from_state="active", to_state="active")
    assert transition_object(done) == {"applied": "recorded", "from": "active", "to": "active"}


def test_transition_response_and_refusal_through_a_view(api):
    ok = api.post("/_test/transition", {"ok": True})
    assert ok.status_code == 200
    assert ok.json() == {
        "data": {"id": "x1"},
        "transition": {"applied": "transitioned", "from": "draft", "to": "active"},
    }
    refused = api.post("/_test/transition", {"reason": "illegal_edge", "message": "Cannot activate"})
    assert refused.status_code == 422
    assert refused.json() == {
        "error": {
            "category": "invalid_state",
            "message": "Cannot activate",
            "data": {"reason": "illegal_edge", "from": "draft", "to": "active"},
        }
    }
    gone = api.post("/_test/transition", {"reason": "campaign_not_found", "message": "Campaign not found"})
    assert gone.status_code == 404
    assert error_of(gone) == {"category": "not_found", "message": "Campaign not found"}


def test_unhandled_exception_is_a_json_500_without_trace(api):
    response = api.get("/_test/boom")
    assert response.status_code == 500
    assert response.json() == {"error": {"category": "internal", "message": "Internal server error"}}
    assert b"secret" not in response.content and b"Traceback" not in response.content


def test_a_5xx_rolls_back_the_handlers_writes(api):
    response = api.post("/_test/boom", {})
    assert response.status_code == 500
    assert not Contact.objects.filter(email="rolled-back@example.com").exists()


@pytest.mark.parametrize("idempotency_key", [None, "refused-1"])
def test_a_refusal_rolls_back_the_handlers_writes(api, idempotency_key):
    # without an Idempotency-Key the view holds no savepoint of its own (issue 12): the transaction is rolled back
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    response = api.post("/_test/refused", {}, headers=headers)
    assert response.status_code == 422
    assert not Contact.objects.filter(email="refused@example.com").exists()
    if idempotency_key:  # the refusal is still stored and replayed
        again = api.post("/_test/refused", {}, headers=headers)
        assert again.status_code == 422 and again["Idempotent-Replayed"] == "true"
    ok = api.post("/_test/echo", {"after": 1})  # the connection is usable after the rollback
    assert ok.status_code == 201


@override_settings(DEBUG=True)
def test_exception_outside_drf_under_api_prefix_is_json_500():
    client = Client(raise_request_exception=False)
    response = client.get("/api/v1/_test/plain-crash")
    assert response.status_code == 500
    assert response.json() == {"error": {"category": "internal", "message": "Internal server error"}}
    assert b"secret" not in response.content


# --- routing ------------------------------------------------------------------------------------------------


def test_unknown_api_path_is_json_404(api):
    for url in ("/nope", "/nope/", "/contactsx", "/topics/a/b/c/d", "/segments/a/b"):
        response = api.get(url)
        assert response.status_code == 404, url
        assert response["Content-Type"].startswith("application/json")
        assert response.json() == {"error": {"category": "not_found", "message": "Not found"}}
    anonymous = Client().get("/api/v1/definitely-not-here")
    assert anonymous.status_code == 404
    assert anonymous.json()["error"]["message"] == "Not found"


def test_unsupported_method_is_405_with_allow_and_no_category(api):
    response = api.delete("/contacts")
    assert response.status_code == 405
    assert response.json() == {"error": {"message": "Method not allowed"}}
    allowed = {m.strip() for m in response["Allow"].split(",")}
    assert {"GET", "POST"} <= allowed and "DELETE" not in allowed
    # routing comes before authentication
    anonymous = ApiClient(None).request("PATCH", "/contacts")
    assert anonymous.status_code == 405


def test_trailing_slash_variants_never_redirect(api):
    for url in (
        "/contacts",
        "/contacts/",
        "/topics",
        "/topics/",
        "/segments",
        "/segments/",
        "/health",
        "/health/",
    ):
        response = api.get(url)
        assert response.status_code == 200, url
    created = api.post("/contacts/", {"email": "slash@example.com"})
    assert created.status_code == 201
    flagged = api.get("/_test/flagged/")
    assert flagged.status_code == 200


def test_options_preflight_is_204_without_auth_and_echoes_listed_origin(settings):
    settings.API_ALLOWED_ORIGINS = ["https://app.example.com"]
    client = Client()
    response = client.options(
        "/api/v1/contacts",
        headers={"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"},
    )
    assert response.status_code == 204
    assert response.content == b""
    assert response["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert response["Access-Control-Allow-Methods"] == "GET, POST, PUT, PATCH, DELETE, OPTIONS"
    assert response["Access-Control-Allow-Headers"] == "Content-Type, Authorization, Idempotency-Key"
    assert response["Access-Control-Max-Age"] == "86400"
    assert "Origin" in response["Vary"]
    assert not response.has_header("X-RateLimit-Limit")
    # any API path, even an unknown one; an unlisted origin is not echoed
    other = client.options("/api/v1/whatever/else/", headers={"Origin": "https://evil.example.com"})
    assert other.status_code == 204
    assert not other.has_header("Access-Control-Allow-Origin")


def test_other_responses_carry_cors_and_expose_headers(settings, api):
    settings.API_ALLOWED_ORIGINS = ["https://app.example.com"]
    response = api.get("/contacts", headers={"Origin": "https://app.example.com"})
    assert response["Access-Control-Allow-Origin"] == "https://app.example.com"
    exposed = response["Access-Control-Expose-Headers"]
    for name in (
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
        "Retry-After",
        "Idempotent-Replayed",
    ):
        assert name in exposed


def test_no_csrf_and_no_cookie_credentials(api, key, django_user_model):
    # A logged-in admin session is not a credential for the API, and CSRF is not enforced.
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw-123456789")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    anonymous = client.get("/api/v1/contacts")
    assert anonymous.status_code == 401
    keyed = client.post(
        "/api/v1/contacts",
        data=json.dumps({"email": "csrf@example.com"}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key[1]}"},
    )
    assert keyed.status_code == 201
    assert not keyed.cookies


def test_the_admin_middleware_steps_aside_for_the_api_only(api, key, django_user_model):
    # issue 12: no session, user or messages are attached under /api/v1 (their middleware found nothing there:
    # the cookies are dropped), the one header they left is still sent, and the admin keeps all of them
    from django.urls import reverse

    from owlat.admin_tenancy.access import NO_TENANCY

    probed.clear()
    response = api.get("/_test/probe", headers={"Cookie": "sessionid=abc; csrftoken=x"})
    assert response.status_code == 200
    assert probed == {"session": False, "messages": False, "tenancy": NO_TENANCY, "user": key[0]}
    assert response["Vary"] == "Cookie, Origin" and not response.cookies

    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw-123456789")
    admin = Client(enforce_csrf_checks=True)
    admin.force_login(user)
    assert admin.get(reverse("admin:index")).status_code == 200  # session user
    assert admin.post(reverse("admin:logout")).status_code == 403  # CSRF enforced outside the API


# --- authentication (API-02) ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [None, "", "Basic dXNlcjpwYXNz", "Token abc def", "Bearer", "Bearer    "],
)
def test_missing_or_other_authorization_forms_count_as_missing(header):
    headers = {} if header is None else {"Authorization": header}
    response = ApiClient(None).get("/contacts", headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": {"category": "unauthenticated", "message": MISSING}}
    assert not response.has_header("X-RateLimit-Limit")


def test_x_api_key_header_counts_as_missing(key):
    response = ApiClient(None).get("/contacts", headers={"X-Api-Key": key[1]})
    assert response.status_code == 401
    assert error_of(response)["message"] == MISSING


@pytest.mark.parametrize(
    "raw",
    [
        "lm_test_key",
        "lm_live_short",
        "lm_live_" + "a" * 31,
        "lm_live_" + "a" * 31 + "!",
        "xx_live_" + "a" * 32,
    ],
)
def test_malformed_key_is_invalid_format(raw):
    response = ApiClient(raw).get("/contacts")
    assert response.status_code == 401
    assert response.json() == {"error": {"category": "unauthenticated", "message": "Invalid API key format"}}
    assert not response.has_header("X-RateLimit-Remaining")


def test_unknown_revoked_inactive_or_expired_key_is_invalid(org):
    from owlat.apikeys import api_key_revoke

    unknown = ApiClient("lm_live_" + "Z" * 32).get("/contacts")
    assert unknown.status_code == 401
    assert error_of(unknown) == {"category": "unauthenticated", "message": "Invalid API key"}

    revoked, raw_revoked = make_key(org)
    api_key_revoke(api_key_id=revoked.pk, organization_id=org.pk)
    inactive, raw_inactive = make_key(org)
    ApiKey.objects.filter(pk=inactive.pk).update(is_active=False)
    _, raw_expired = make_key(org, expires_at=timezone.now() - dt.timedelta(seconds=1))
    for raw in (raw_revoked, raw_inactive, raw_expired):
        response = ApiClient(raw).get("/contacts")
        assert response.status_code == 401
        assert error_of(response)["message"] == "Invalid API key"
        assert not response.has_header("X-RateLimit-Limit")


def test_bearer_scheme_is_case_insensitive_and_bare_key_is_accepted(key):
    raw = key[1]
    for header in (f"Bearer {raw}", f"bearer {raw}", f"BEARER {raw}", raw):
        response = ApiClient(None).get("/contacts", headers={"Authorization": header})
        assert response.status_code == 200, header


def test_last_used_at_is_written_at_most_once_a_minute(api, key):
    api_key = key[0]
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at is None
    api.get("/contacts")
    first = ApiKey.objects.get(pk=api_key.pk).last_used_at
    assert first is not None
    api.get("/contacts")
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at == first
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=first - dt.timedelta(seconds=61))
    api.get("/contacts")
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at > first - dt.timedelta(seconds=1)


# --- scopes and flags (API-03, DOM-17) ----------------------------------------------------------------------


def test_missing_scope_is_403_with_rate_headers(org):
    _, raw = make_key(org, scopes=["contacts:read"])
    response = ApiClient(raw).post("/contacts", {"email": "a@example.com"})
    assert response.status_code == 403
    assert response.json() == {
        "error": {
            "category": "forbidden",
            "message": "This API key is missing the required scope: contacts:write",
        }
    }
    assert response["X-RateLimit-Limit"] == "10"
    # scopes do not imply each other
    _, manage_only = make_key(org, scopes=["topics:manage"])
    listing = ApiClient(manage_only).get("/topics")
    assert error_of(listing)["message"] == "This API key is missing the required scope: topics:read"


def test_disabled_feature_flag_is_403_with_dom17_message(api, org):
    from owlat.models import OrganizationSettings

    assert api.get("/_test/flagged").status_code == 200
    settings_row = OrganizationSettings.objects.get(organization=org)
    settings_row.feature_flags = {**settings_row.feature_flags, "automations": False}
    settings_row.save()
    response = api.get("/_test/flagged")
    assert response.status_code == 403
    assert response.json() == {
        "error": {
            "category": "forbidden",
            "message": 'Feature "automations" is disabled on this Owlat instance. '
            "An admin can enable it from Settings → Features.",
        }
    }


def test_check_order_auth_then_rate_then_scope_then_flag(org, settings):
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(feature_flags={"automations": False})
    api_key, raw = make_key(org, scopes=["events:write"])
    client = ApiClient(raw)
    # scope (403) is reported before the disabled flag
    response = client.get("/_test/flagged")
    assert error_of(response)["message"] == "This API key is missing the required scope: contacts:read"
    # an empty bucket (429) is reported before the scope
    RateBucket.objects.update_or_create(
        key=f"api:{api_key.pk}", defaults={"tokens": 0.0, "updated_at": time.time() + 5}
    )
    response = client.get("/_test/flagged")
    assert response.status_code == 429
    # an invalid key (401) before everything
    assert ApiClient("lm_live_" + "Q" * 32).get("/_test/flagged").status_code == 401


# --- rate limit (API-04) ------------------------------------------------------------------------------------


def test_rate_limit_headers_on_success_and_errors(api, key, monkeypatch):
    # the limiter's clock stands still, so no token comes back between the requests however slow the machine
    now = float(int(time.time()))
    monkeypatch.setattr(auth, "clock", lambda: now)
    ok = api.get("/contacts")
    assert ok["X-RateLimit-Limit"] == "10"
    assert ok["X-RateLimit-Remaining"] == "14"
    # one token short of 15 at 10 per second: full again 0.1 s later, rounded up to the next whole second
    assert int(ok["X-RateLimit-Reset"]) == now + 1
    missing = api.get("/contacts/nobody%40example.com")
    assert missing.status_code == 404
    assert missing["X-RateLimit-Limit"] == "10"
    assert missing["X-RateLimit-Remaining"] == "13"
    assert int(missing["X-RateLimit-Reset"]) == now + 1
    bad = api.post("/contacts", raw=b"not json")
    assert bad.status_code == 400
    assert bad["X-RateLimit-Remaining"] == "12" and int(bad["X-RateLimit-Reset"]) == now + 1


def test_empty_bucket_answers_429_with_retry_after(api, key):
    api_key = key[0]
    assert api.get("/contacts").status_code == 200
    # the bucket is empty and its clock a few seconds ahead, so nothing refills before the next request
    RateBucket.objects.filter(key=f"api:{api_key.pk}").update(tokens=0.0, updated_at=time.time() + 5)
    response = api.get("/contacts")
    assert response.status_code == 429
    assert response.json() == {
        "error": {
            "category": "rate_limited",
            "message": "Rate limit exceeded. Maximum 10 requests per second.",
            "data": {"retryAfter": 1},
        }
    }
    assert response["Retry-After"] == "1"
    assert response["X-RateLimit-Remaining"] == "0"
    assert response["X-RateLimit-Limit"] == "10"
    assert int(response["X-RateLimit-Reset"]) >= int(time.time())
    refill_bucket(api_key)
    assert api.get("/contacts").status_code == 200


def test_token_bucket_arithmetic_is_deterministic(key):
    api_key = key[0]
    now = 1_800_000_000.0
    states = [take_request_token(api_key, now=now) for _ in range(16)]
    assert [s.allowed for s in states] == [True] * 15 + [False]
    assert states[0].remaining == 14 and states[14].remaining == 0
    assert states[15].remaining == 0 and states[15].retry_after == 1
    assert states[14].reset == int(now + 1.5) or states[14].reset == int(now) + 2
    later = take_request_token(api_key, now=now + 0.35)  # 3.5 tokens refilled
    assert later.allowed and later.remaining == 2


def test_rate_limit_is_per_key(org):
    first, raw_first = make_key(org)
    _, raw_second = make_key(org)
    # empty the first key's bucket (its clock a few seconds ahead, so no refill happens meanwhile)
    RateBucket.objects.update_or_create(
        key=f"api:{first.pk}", defaults={"tokens": 0.0, "updated_at": time.time() + 5}
    )
    assert ApiClient(raw_first).get("/contacts").status_code == 429
    assert ApiClient(raw_second).get("/contacts").status_code == 200


def test_key_lookup_and_token_take_are_one_statement(api, key, monkeypatch):
    # issue 12: after a key's first request (which creates its bucket) the lookup takes the token in its own
    # statement; the bucket and the headers are those of the two separate steps
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    now = float(int(time.time()))
    monkeypatch.setattr(auth, "clock", lambda: now)
    assert api.get("/contacts")["X-RateLimit-Remaining"] == "14"  # creates the bucket
    with CaptureQueriesContext(connection) as ctx:
        response = api.get("/contacts")
    assert response["X-RateLimit-Remaining"] == "13"
    bucket_statements = [q["sql"] for q in ctx.captured_queries if "owlat_ratebucket" in q["sql"]]
    key_statements = [q["sql"] for q in ctx.captured_queries if "owlat_apikey" in q["sql"]]
    assert len(bucket_statements) == 1 and bucket_statements == key_statements
    assert RateBucket.objects.get(key=f"api:{key[0].pk}").tokens == pytest.approx(13.0)


def test_a_refused_key_takes_no_token(api, key):
    # a revoked (or unknown) key is 401 and its bucket keeps its tokens, as when the take followed the lookup
    api_key = key[0]
    assert api.get("/contacts").status_code == 200
    bucket = RateBucket.objects.get(key=f"api:{api_key.pk}")
    ApiKey.objects.filter(pk=api_key.pk).update(is_active=False, revoked_at=timezone.now())
    response = api.get("/contacts")
    assert response.status_code == 401
    assert error_of(response)["message"] == "Invalid API key"
    assert not response.has_header("X-RateLimit-Remaining")
    after = RateBucket.objects.get(key=f"api:{api_key.pk}")
    assert (after.tokens, after.updated_at) == (bucket.tokens, bucket.updated_at)


def test_an_expired_key_is_refused_by_the_merged_lookup(api, key):
    api_key = key[0]
    assert api.get("/contacts").status_code == 200
    ApiKey.objects.filter(pk=api_key.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    response = api.get("/contacts")
    assert response.status_code == 401 and error_of(response)["message"] == "Invalid API key"


def test_a_rescoped_or_revoked_key_takes_effect_at_once(api, key):
    # issue 12: the key's instance may be reused by its process, but only while its row is unchanged
    api_key = key[0]
    assert api.get("/contacts").status_code == 200
    assert api.get("/contacts").status_code == 200  # the same row: the instance is reused
    ApiKey.objects.filter(pk=api_key.pk).update(scopes=["events:write"])
    refused = api.get("/contacts")
    assert refused.status_code == 403
    assert error_of(refused)["message"] == "This API key is missing the required scope: contacts:read"
    ApiKey.objects.filter(pk=api_key.pk).update(scopes=["contacts:read", "contacts:write"])
    assert api.get("/contacts").status_code == 200
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now())
    assert api.get("/contacts").status_code == 401


def test_a_405_takes_no_token(api, key, monkeypatch):
    # API-08: an unsupported method is refused before the key is looked up, so no token is taken
    now = float(int(time.time()))
    monkeypatch.setattr(auth, "clock", lambda: now)
    assert api.get("/contacts")["X-RateLimit-Remaining"] == "14"
    assert api.delete("/contacts").status_code == 405
    assert api.get("/contacts")["X-RateLimit-Remaining"] == "13"


# --- bodies (API-05) ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type", ["application/json", "text/plain", "application/x-www-form-urlencoded", None]
)
def test_body_is_json_whatever_the_content_type(api, content_type):
    response = api.post("/_test/echo", raw=b'{"a": 1, "b": null}', content_type=content_type)
    assert response.status_code == 201
    assert response.json() == {"data": {"body": {"a": 1}}}  # null means absent


@pytest.mark.parametrize(
    "raw", [b"", b"   ", b"not json", b"[1, 2]", b'"text"', b"null", b"\xff\xfe{}", b'{"a": 1']
)
def test_missing_unparseable_or_non_object_body_is_400(api, raw):
    response = api.post("/_test/echo", raw=raw)
    assert response.status_code == 400
    assert response.json() == {
        "error": {"category": "invalid_input", "message": "Invalid JSON in request body"}
    }


def test_body_over_15_mib_is_too_large_but_15_mib_is_accepted(api):
    padding = "x" * (15 * 1024 * 1024 - 20)
    accepted = json.dumps({"p": padding})
    assert len(accepted.encode()) <= 15 * 1024 * 1024
    assert api.put("/_test/echo", raw=accepted.encode()).status_code == 200
    too_large = json.dumps({"p": padding + "y" * 100}).encode()
    response = api.put("/_test/echo", raw=too_large)
    assert response.status_code == 400
    assert response.json() == {"error": {"category": "invalid_input", "message": "Request body too large"}}


def test_body_on_get_and_delete_is_ignored(api):
    response = api.get("/contacts", raw=b"this is not json")
    assert response.status_code == 200


def test_plain_path_routes_are_slash_optional(api):
    for url in ("/_test/strict-slash", "/_test/strict-slash/", "/_test/no-slash", "/_test/no-slash/"):
        response = api.post(url, {"a": 1})
        assert response.status_code == 201, url
        assert response.json() == {"data": {"body": {"a": 1}}}


# --- health, schema, docs (API-23, D-15) ---------------------------------------------------------------------


def test_health_needs_no_key_and_reports_database_and_heartbeat():
    from owlat.jobs import heartbeat

    client = Client()
    response = client.get("/api/v1/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["workerHeartbeatAgeSeconds"] is None
    assert len(body["timestamp"]) == 24 and body["timestamp"].endswith("Z")
    assert not any(h.lower().startswith("x-ratelimit") for h in response.headers)
    heartbeat("default")
    body = client.get("/api/v1/health/").json()
    assert 0 <= body["workerHeartbeatAgeSeconds"] < 5
    # an invalid key is not even looked at
    assert client.get("/api/v1/health", headers={"Authorization": "Bearer nonsense"}).status_code == 200


def test_health_reports_an_unreachable_database(monkeypatch):
    from owlat.api import health

    monkeypatch.setattr(health, "_database_ok", lambda: False)
    response = Client().get("/api/v1/health")
    assert response.status_code == 503
    assert response.json()["status"] == "error" and response.json()["database"] == "unavailable"


def test_openapi_schema_and_docs_page_need_no_key():
    client = Client()
    schema = client.get("/api/v1/schema")
    assert schema.status_code == 200
    document = schema.json()
    assert document["openapi"].startswith("3.")
    paths = set(document["paths"])
    assert any(p.startswith("/api/v1/contacts") for p in paths)
    assert any("/topics/" in p for p in paths) and any(p.startswith("/api/v1/segments") for p in paths)
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()


def test_a_view_without_a_declared_scope_fails_closed(api):
    class Unscoped(ApiView):
        required_scopes = {"GET": "contacts:read"}

        def get(self, request):
            return self.ok({})

        def post(self, request):
            return self.created({"ran": True})

    from django.test import RequestFactory

    request = RequestFactory().post(
        "/api/v1/x",
        data=b"{}",
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.raw_key}"},
    )
    response = Unscoped.as_view()(request)
    assert response.status_code == 500
    assert response.data == {"error": {"category": "internal", "message": "Internal server error"}}
