"""Production hardening (issue 13 item 5): HTTPS/cookie/proxy switches from the environment give a clean
`check --deploy`; the admin login is throttled by django-axes (off in test mode, proven here with it on)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings

BASE_DIR = Path(__file__).resolve().parent.parent


def _check_deploy(extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OWLAT_", "DEBUG", "SECURE_", "AXES_"))}
    env.update(
        {
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "SITE_URL": "https://owlat.example.com",
            "ALLOWED_HOSTS": "owlat.example.com",
            **extra,
        }
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_settings():
    result = _check_deploy(
        {
            "SECURE_HSTS_SECONDS": "31536000",
            "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
            "SECURE_HSTS_PRELOAD": "1",
            "SECURE_PROXY_SSL_HEADER": "1",
        }
    )
    output = result.stdout + result.stderr
    issues = [line for line in output.splitlines() if line.startswith("?:") or ": (" in line]
    # the OpenAPI generator's own warnings (drf_spectacular.*) belong to the API schema work, not to deployment
    deploy_issues = [line for line in issues if "drf_spectacular." not in line]
    assert deploy_issues == [], output
    assert result.returncode == 0 or all("drf_spectacular." in line for line in issues), output


def test_an_https_site_url_turns_on_redirect_and_secure_cookies_by_default():
    # only HSTS is opt-in (it cannot be undone in browsers): the check names just that one
    result = _check_deploy({})
    output = result.stdout + result.stderr
    assert "security.W004" in output
    for code in ("W008", "W012", "W016", "W009", "W018", "W020"):
        assert f"security.{code}" not in output, output


# --- login throttling ----------------------------------------------------------------------------------------

AXES_ON = {
    "AXES_ENABLED": True,
    "AXES_FAILURE_LIMIT": 3,
    "AUTHENTICATION_BACKENDS": [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
    ],
}


def _login(client: Client, username: str, password: str):
    return client.post(
        "/admin/login/?next=/admin/", {"username": username, "password": password, "next": "/admin/"}
    )


@pytest.mark.django_db
def test_admin_login_is_locked_out_after_repeated_failures(django_user_model):
    from axes.models import AccessAttempt
    from axes.utils import reset

    django_user_model.objects.create_user("ada", "ada@example.com", "right-password", is_staff=True)
    django_user_model.objects.create_user("bob", "bob@example.com", "bobs-password", is_staff=True)
    with override_settings(**AXES_ON):
        client = Client()
        # a correct login works with throttling on
        assert _login(client, "ada", "right-password").status_code == 302
        client.logout()
        # three wrong passwords lock the account out from this address …
        codes = [_login(client, "ada", "wrong").status_code for _ in range(3)]
        assert codes[:2] == [200, 200] and codes[2] == 429
        assert AccessAttempt.objects.filter(username="ada").exists()
        # … even with the right password now
        assert _login(client, "ada", "right-password").status_code == 429
        # another account is not affected
        assert _login(Client(), "bob", "bobs-password").status_code == 302
        # an operator reset (axes_reset command) lifts it
        reset(username="ada")
        assert _login(Client(), "ada", "right-password").status_code == 302


def test_throttling_is_off_in_test_mode_and_on_by_default_otherwise():
    from django.conf import settings

    assert settings.AXES_ENABLED is False
    assert "axes.middleware.AxesMiddleware" in settings.MIDDLEWARE
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
            "'owlat.settings'); django.setup(); from django.conf import settings as s; "
            "print(s.AXES_ENABLED, s.AUTHENTICATION_BACKENDS[0])",
        ],
        cwd=BASE_DIR,
        env={**{k: v for k, v in os.environ.items() if not k.startswith(("OWLAT_", "AXES_"))}, "DEBUG": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split() == ["True", "axes.backends.AxesStandaloneBackend"], result.stderr
