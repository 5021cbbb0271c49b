"""The page django-axes answers once a username is locked out from an address (`AXES_LOCKOUT_CALLABLE`): a 429
that says when the lock lifts and who can lift it sooner, instead of axes' bare "Account locked" text."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    username = get_client_username(request, credentials) or ""
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "username": username,
        "cooloff_minutes": minutes,
    }
    if "application/json" in request.headers.get("Accept", ""):
        unlock = f"try again in {minutes} minutes" if minutes else "ask the operator to lift the lock"
        return JsonResponse(
            {
                "error": "login_locked",
                "field": "username",
                "message": f"Too many failed sign-ins for this username from your address: {unlock}; the operator "
                "can lift it sooner with `manage.py axes_reset_username`.",
                "retryAfterMinutes": minutes,
            },
            status=429,
        )
    response = render(request, "owlat/auth/lockout.html", context, status=429)
    if minutes:
        response["Retry-After"] = str(minutes * 60)
    return response
