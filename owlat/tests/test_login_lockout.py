"""A locked-out sign-in (django-axes) answers a page saying when the lock lifts and who can lift it sooner."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def axes_on(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = 15 / 60
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    get_user_model().objects.create_user("ops@example.com", "ops@example.com", "right-password-1")


def fail(client, **extra):
    return client.post(
        "/admin/login/",
        {"username": "ops@example.com", "password": "wrong"},
        REMOTE_ADDR="198.51.100.7",
        **extra,
    )


def test_a_locked_out_sign_in_says_when_it_unlocks_and_who_can_unlock_it(client, axes_on):
    for _ in range(2):
        assert fail(client).status_code == 200  # the login form again, with its error
    r = fail(client)
    assert r.status_code == 429
    html = r.content.decode()
    assert "Sign-in locked for now" in html and "ops@example.com" in html
    assert "15 minutes" in html and "lifts by itself" in html
    assert "manage.py axes_reset_username ops@example.com" in html and "Access attempts" in html
    assert r["Retry-After"] == "900"
    # the right password is refused too while locked, with the same page
    r = client.post(
        "/admin/login/",
        {"username": "ops@example.com", "password": "right-password-1"},
        REMOTE_ADDR="198.51.100.7",
    )
    assert r.status_code == 429 and "Sign-in locked for now" in r.content.decode()


def test_a_locked_out_json_client_gets_a_429_naming_the_field_and_the_wait(client, axes_on):
    for _ in range(2):
        fail(client)
    r = fail(client, HTTP_ACCEPT="application/json")
    assert r.status_code == 429
    body = r.json()
    assert body["error"] == "login_locked" and body["field"] == "username"
    assert body["retryAfterMinutes"] == 15 and "axes_reset_username" in body["message"]
