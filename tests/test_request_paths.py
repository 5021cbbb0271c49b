"""Small request-path promises: `//api/v1/…` (an SDK base URL ending in `/`) answers as `/api/v1/…`, and
`/favicon.ico` is an icon, not a 404."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["//api/v1/contacts", "///api/v1/contacts"])
def test_a_doubled_leading_slash_reaches_the_api(path):
    single = Client().get("/api/v1/contacts")
    doubled = Client().get(
        "/", PATH_INFO=path
    )  # as sent on the wire (the test client would parse `//api` as a host)
    assert doubled.status_code == single.status_code == 401
    assert doubled["Content-Type"].startswith("application/json")
    assert doubled.json() == single.json()


def test_an_unknown_doubled_path_is_the_apis_json_404():
    r = Client().get("/", PATH_INFO="//api/v1/no-such-resource")
    assert r.status_code in (401, 404) and r["Content-Type"].startswith("application/json")


def test_the_favicon_is_an_icon():
    r = Client().get("/favicon.ico")
    assert r.status_code == 200 and r["Content-Type"] == "image/svg+xml"
    assert r.content.startswith(b"<svg") and "max-age" in r["Cache-Control"]


def test_a_4xx_is_not_logged_again_by_django(caplog):
    """The access log has each request once; Django's own 4xx warnings would repeat it (5xx still log)."""
    import logging

    with caplog.at_level(logging.INFO):
        assert Client().get("/no-such-page/").status_code == 404
        assert Client().get("/api/v1/contacts").status_code == 401
    assert [r for r in caplog.records if r.name == "django.request"] == []
    assert logging.getLogger("django.request").isEnabledFor(logging.ERROR)
