"""One timeline per contact: activities, events, imports and subscriptions from the kernel, and what the apps
register (automation runs and step runs, sends with their outcomes, inbound mail), newest first, one page at a time.

The kernel imports no app: an app registers a source in its `AppConfig.ready()` with
`register_timeline_source(name, source, supersedes=(...))`. A source is `source(contact, limit)` and returns
the newest `limit` rows of that contact, of the contact's organization, in ONE query (the page's query count does
not grow with the contact's history). `supersedes` names activity types
(DOM-11) the source tells better, so the activity source leaves them out (a send row says more than `email_sent`).
Links are built from admin URL names; a name that does not resolve is skipped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.urls import NoReverseMatch, reverse

from owlat.models import Contact, ContactActivity, ContactTopic, Event

PAGE_SIZE = 50
#: the deepest page: each source then reads at most PAGE_SIZE * MAX_PAGES + 1 rows
MAX_PAGES = 20


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class TimelineRow:
    when: dt.datetime
    kind: str  # what the row is about: activity, event, import, subscription, automation, step, send, inbox
    title: str
    detail: str = ""
    outcome: str = ""
    links: list[Link] = field(default_factory=list)


@dataclass(frozen=True)
class TimelinePage:
    rows: list[TimelineRow]
    number: int
    has_older: bool


TimelineSource = Callable[[Contact, int], list[TimelineRow]]
_SOURCES: dict[str, TimelineSource] = {}
_SUPERSEDED: set[str] = set()


def register_timeline_source(name: str, source: TimelineSource, *, supersedes: Iterable[str] = ()) -> None:
    _SOURCES[name] = source
    _SUPERSEDED.update(supersedes)


def timeline_sources() -> dict[str, TimelineSource]:
    return dict(_SOURCES)


def contact_timeline(contact: Contact, *, page: int = 1, per_page: int = PAGE_SIZE) -> TimelinePage:
    """Page `page` (1 = the newest rows) of the merged sources: one query per source whatever the history.

    Each source reads its newest `page * per_page + 1` rows, so the merge is exact (rows of one instant keep
    one order on every page) and a page knows whether older rows exist; `page` is clamped to 1..MAX_PAGES."""
    page = min(max(page, 1), MAX_PAGES)
    wanted = page * per_page
    rows: list[TimelineRow] = []
    for source in _SOURCES.values():
        rows.extend(source(contact, wanted + 1))
    rows.sort(key=lambda r: r.when, reverse=True)
    has_older = len(rows) > wanted and page < MAX_PAGES
    return TimelinePage(rows=rows[wanted - per_page : wanted], number=page, has_older=has_older)


def admin_link(label: str, url_name: str, *args: Any, query: str = "") -> Link | None:
    try:
        url = reverse(url_name, args=args)
    except NoReverseMatch:
        return None
    return Link(label, f"{url}?{query}" if query else url)


def links(*candidates: Link | None) -> list[Link]:
    return [link for link in candidates if link is not None]


def newest(queryset: Any, column: str) -> Any:
    """`queryset` of one contact, newest first on `column` (ties in one fixed order)."""
    return queryset.order_by(f"-{column}", "-pk")


# --- the kernel's sources ------------------------------------------------------------------------------------

TITLES = {
    "created": "Contact created",
    "email_sent": "Email sent",
    "email_opened": "Email opened",
    "email_clicked": "Link clicked",
    "email_bounced": "Email bounced",
    "email_complained": "Marked as spam",
    "inbound_received": "Inbound mail received",
    "topic_confirmed": "Subscription confirmed",
    "topic_unsubscribed": "Unsubscribed",
    "doi_attested": "Double opt-in attested",
    "event_received": "Event received",
    "imported": "Imported from a file",
}


def _detail(activity_type: str, meta: dict[str, Any]) -> str:
    parts = []
    if meta.get("fileName"):
        parts.append(f"file {meta['fileName']}")
    if meta.get("url"):
        parts.append(str(meta["url"]))
    if meta.get("bounceType"):
        parts.append(f"{meta['bounceType']} bounce")
    if meta.get("message"):
        parts.append(str(meta["message"])[:200])
    if meta.get("kind") and activity_type.startswith("email_"):
        parts.append(f"{meta['kind']} mail".replace("_", " "))
    if meta.get("source"):
        parts.append(f"source: {meta['source']}")
    return " · ".join(parts)


def _activity_links(contact: Contact, meta: dict[str, Any]) -> list[Link]:
    found: list[Link | None] = []
    send_id = meta.get("sendId")
    if send_id:
        name = "emailsend" if meta.get("kind") == "campaign" else "transactionalsend"
        found.append(admin_link("send", f"admin:delivery_{name}_change", send_id))
    if meta.get("automationId"):
        found.append(admin_link("automation", "admin:automations_automation_change", meta["automationId"]))
        found.append(
            admin_link(
                "run",
                "admin:automations_automationrun_changelist",
                query=f"automation__exact={meta['automationId']}&contact__exact={contact.pk}",
            )
        )
    if meta.get("campaignId"):
        found.append(admin_link("campaign", "admin:campaigns_campaign_change", meta["campaignId"]))
    if meta.get("topicId"):
        found.append(admin_link("topic", "admin:owlat_topic_change", meta["topicId"]))
    return links(*found)


def activity_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    """DOM-11 activities, less the types another source tells (one query)."""
    qs = ContactActivity.objects.filter(organization_id=contact.organization_id, contact=contact).exclude(
        activity_type__in=sorted(_SUPERSEDED)
    )
    rows = []
    for activity in newest(qs, "occurred_at")[:limit]:
        meta = activity.metadata if isinstance(activity.metadata, dict) else {}
        title = TITLES.get(activity.activity_type, activity.activity_type.replace("_", " ").capitalize())
        kind = "import" if activity.activity_type == "imported" else "activity"
        rows.append(
            TimelineRow(
                when=activity.occurred_at,
                kind=kind,
                title=title,
                detail=_detail(activity.activity_type, meta),
                outcome=str(meta.get("outcome") or ""),
                links=_activity_links(contact, meta),
            )
        )
    return rows


def event_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    """Stored events with their properties and how many automations they started (one query)."""
    qs = Event.objects.filter(organization_id=contact.organization_id, contact=contact)
    rows = []
    for event in newest(qs, "created_at")[:limit]:
        props = ", ".join(f"{k}: {v}" for k, v in (event.properties or {}).items())
        started = event.triggered_automations or 0
        rows.append(
            TimelineRow(
                when=event.created_at,
                kind="event",
                title=f"Event “{event.event_name}”",
                detail=props[:300],
                outcome=f"started {started} automation(s)" if started else "",
                links=links(admin_link("event", "admin:owlat_event_change", event.pk)),
            )
        )
    return rows


def subscription_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    """Topic memberships with their consent source (one query)."""
    qs = ContactTopic.objects.filter(organization_id=contact.organization_id, contact=contact).select_related(
        "topic"
    )
    rows = []
    for member in newest(qs, "added_at")[:limit]:
        rows.append(
            TimelineRow(
                when=member.added_at,
                kind="subscription",
                title=f"Subscribed to “{member.topic.name}”",
                detail=f"source: {member.consent_source}" if member.consent_source else "",
                outcome="waiting for double opt-in" if member.pending_doi_confirmation else "subscribed",
                links=links(admin_link("topic", "admin:owlat_topic_change", member.topic_id)),
            )
        )
    return rows


register_timeline_source("activities", activity_rows, supersedes=("event_received",))
register_timeline_source("events", event_rows)
register_timeline_source("subscriptions", subscription_rows)
