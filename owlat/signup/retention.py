"""Retention of sign-ups nobody confirmed: a submission holds an address and what it typed before any consent,
so it is kept only as long as its confirmation link works (`SIGNUP_CONFIRM_MAX_AGE_DAYS`, default 7) and then
deleted by the daily `signup_submissions_purge_task`. Confirmed submissions stay (they are the consent proof
behind the membership and the form's conversion figures)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from owlat.models import SignupSubmission
from owlat.signup.guards import setting


def signup_submissions_purge(*, now: dt.datetime | None = None) -> int:
    """Delete unconfirmed submissions older than the link's lifetime; returns how many. Running it twice
    deletes nothing the second time (safe for django-q2's retries)."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=setting("SIGNUP_CONFIRM_MAX_AGE_DAYS", 7))
    deleted, _ = SignupSubmission.objects.filter(confirmed_at__isnull=True, created_at__lt=cutoff).delete()
    return deleted


def signup_submissions_purge_task() -> str:
    """Daily schedule (owlat.kernel_schedules)."""
    return f"purged {signup_submissions_purge()} unconfirmed sign-ups"
