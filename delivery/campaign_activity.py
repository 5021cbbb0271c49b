"""What a contact did with one campaign, read from its send rows, for the campaign conditions of the condition
language (received / opened / clicked campaign X, clicked link L of campaign X). Registered with the kernel in
`DeliveryConfig.ready()`; the kernel compiles a condition to `Exists(<these rows>)`.

A link is matched in the click log (a JSON list) by its JSON-encoded form in the column's text, with a regex so
the match is case-sensitive and exact on PostgreSQL and SQLite alike (SQLite's LIKE ignores case); the quotes
around the encoded URL keep `…/a` from matching `…/ab`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast

from delivery.models import EmailSend, SendStatus


def _link_q(url: str) -> Q:
    forms = {json.dumps(url), json.dumps(url, ensure_ascii=False)}
    q = Q()
    for form in forms:
        q |= Q(clicked_links_text__regex=re.escape(form))
    return q


def campaign_activity_rows(
    *, organization_id: Any, campaign_id: Any, activity: str, url: str | None = None, contact_id: Any = None
) -> QuerySet:
    """The campaign's live rows of the organization where the contact received (left for the provider and did
    not fail), opened or clicked (the link `url` when given); `contact_id` may be an `OuterRef`."""
    rows = EmailSend.objects.filter(
        organization_id=organization_id, campaign_id=campaign_id, deleted_at__isnull=True
    )
    if contact_id is not None:
        rows = rows.filter(contact_id=contact_id)
    if activity == "received":
        rows = rows.filter(sent_at__isnull=False).exclude(status=SendStatus.FAILED)
    elif activity == "opened":
        rows = rows.filter(opened_at__isnull=False)
    elif url:
        rows = rows.annotate(clicked_links_text=Cast("clicked_links", TextField())).filter(_link_q(url))
    else:
        rows = rows.filter(Q(clicked_at__isnull=False) | ~Q(clicked_links=[]))
    return rows.values("contact_id")
