"""The site-wide Content-Security-Policy's deploy checks (owlat.W010-W013) and its middleware."""

from __future__ import annotations

import copy

from django.conf import settings
from django.http import HttpResponse
from django.test import RequestFactory

from owlat.content_policy import MIDDLEWARE_PATH, ContentPolicyMiddleware, content_policy_warnings


def _ids(policy, middleware=None):
    return [w.id for w in content_policy_warnings(policy, middleware or list(settings.MIDDLEWARE))]


def _with(**directives):
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"].update(directives)
    return policy


def test_the_shipped_policy_passes_the_deploy_checks():
    assert MIDDLEWARE_PATH in settings.MIDDLEWARE
    assert _ids(settings.CONTENT_SECURITY_POLICY) == []


def test_a_missing_policy_or_middleware_is_warned_about():
    assert _ids(None) == ["owlat.W010"]
    assert _ids({"DIRECTIVES": {}}) == ["owlat.W010"]
    others = [m for m in settings.MIDDLEWARE if m != MIDDLEWARE_PATH]
    assert _ids(settings.CONTENT_SECURITY_POLICY, others) == ["owlat.W010"]


def test_scripts_from_anywhere_or_inline_are_warned_about():
    assert _ids(_with(**{"script-src": ["'self'", "'unsafe-inline'"]})) == ["owlat.W011"]
    assert _ids(_with(**{"script-src": ["https:"]})) == ["owlat.W011"]
    assert _ids(_with(**{"script-src": None, "default-src": ["*"]})) == ["owlat.W011", "owlat.W012"]


def test_an_opened_protective_directive_or_an_excluded_prefix_is_warned_about():
    warnings = content_policy_warnings(
        _with(**{"object-src": None, "frame-ancestors": ["*"]}), settings.MIDDLEWARE
    )
    assert [w.id for w in warnings] == ["owlat.W012"]
    assert "object-src is not 'none'" in warnings[0].msg and "frame-ancestors allows *" in warnings[0].msg
    excluded = {**settings.CONTENT_SECURITY_POLICY, "EXCLUDE_URL_PREFIXES": ["/archive"]}
    assert _ids(excluded) == ["owlat.W013"]


def test_the_middleware_builds_a_plain_header_once_and_a_nonce_header_per_request(settings):
    middleware = ContentPolicyMiddleware(lambda request: HttpResponse("x"))
    plain = middleware(RequestFactory().get("/api/v1/health"))["Content-Security-Policy"]
    assert "'nonce-" not in plain and "object-src 'none'" in plain

    def uses_nonce(request):
        return HttpResponse(f"<script nonce='{request.csp_nonce}'></script>")

    request = RequestFactory().get("/admin/")
    header = ContentPolicyMiddleware(uses_nonce)(request)["Content-Security-Policy"]
    assert f"'nonce-{request._csp_nonce}'" in header
    settings.CONTENT_SECURITY_POLICY = _with(**{"img-src": ["'self'", "https://cdn.example.com"]})
    assert "https://cdn.example.com" in middleware(RequestFactory().get("/"))["Content-Security-Policy"]
