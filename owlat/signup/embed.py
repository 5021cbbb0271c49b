"""The embed snippet an operator copies into a web page: a plain HTML form posting to the hosted page's URL,
with the honeypot and an empty timestamp field that a three-line script fills from `timestamp.json` (allowed
only from the form's listed origins). Without the script (a strict CSP on the operator's site), the first post
shows the visitor our hosted page with their values and a fresh timestamp, and the second goes through."""

from __future__ import annotations

from django.conf import settings
from django.template.loader import render_to_string

from owlat.models import SignupForm
from owlat.signup.services import form_fields, offered_topics


def public_url(form: SignupForm) -> str:
    return f"{settings.SITE_URL.rstrip('/')}/forms/{form.pk}/"


def embed_snippet(form: SignupForm) -> str:
    """The HTML to paste; labels and texts escaped (they are the operator's plain text)."""
    return render_to_string(
        "owlat/signup/embed.html",
        {
            "form": form,
            "action": public_url(form),
            "timestamp_url": f"{public_url(form)}timestamp.json",
            "fields": form_fields(form),
            "topics": offered_topics(form),
        },
    ).strip()
