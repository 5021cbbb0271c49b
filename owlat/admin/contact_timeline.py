"""The contact page's history: the DOM-11 activity timeline as readable rows linking to the send,
automation run, campaign, topic or event they are about, and extra sections other apps contribute.

The kernel imports no app, so links are built from admin URL names (a missing app's name is skipped), and an app
adds a section with `register_contact_section(section)`: `section(request, contact) -> ContactSection | None`
(delivery registers the per-contact email history: subject, template, status, opened, clicked).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from owlat.models import Contact, ContactActivity


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class TimelineRow:
    when: Any
    title: str
    detail: str = ""
    links: list[Link] = field(default_factory=list)


@dataclass(frozen=True)
class ContactSection:
    """A table on the contact page: `rows` are lists of cells (strings, booleans, or `Link`)."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    empty: str = "Nothing yet."
    anchor: str = ""


ContactSectionSource = Callable[[HttpRequest, Contact], "ContactSection | None"]
_SECTIONS: list[ContactSectionSource] = []


def register_contact_section(source: ContactSectionSource) -> None:
    if source not in _SECTIONS:
        _SECTIONS.append(source)


def contact_sections(request: HttpRequest, contact: Contact) -> list[ContactSection]:
    sections = []
    for source in _SECTIONS:
        section = source(request, contact)
        if section is not None:
            sections.append(section)
    return sections


def admin_link(label: str, url_name: str, *args: Any, query: str = "") -> Link | None:
    try:
        url = reverse(url_name, args=args)
    except NoReverseMatch:
        return None
    return Link(label, f"{url}?{query}" if query else url)


TITLES = {
    "created": "Contact created",
    "email_sent": "Email sent",
    "email_opened": "Email opened",
    "email_clicked": "Link clicked",
    "email_bounced": "Email bounced",
    "email_complained": "Marked as spam",
    "inbound_received": "Inbound mail received",
    "topic_confirmed": "Subscribed to a topic",
    "topic_unsubscribed": "Unsubscribed from a topic",
    "doi_attested": "Double opt-in attested",
    "event_received": "Event received",
}


def _detail(activity_type: str, meta: dict[str, Any]) -> str:
    parts = []
    if activity_type == "event_received" and meta.get("eventName"):
        parts.append(f"“{meta['eventName']}”")
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


def _links(contact: Contact, meta: dict[str, Any]) -> list[Link]:
    links = []
    send_id = meta.get("sendId")
    if send_id:
        name = "emailsend" if meta.get("kind") == "campaign" else "transactionalsend"
        links.append(admin_link("send", f"admin:delivery_{name}_change", send_id))
    if meta.get("automationId"):
        links.append(admin_link("automation", "admin:automations_automation_change", meta["automationId"]))
        links.append(
            admin_link(
                "run",
                "admin:automations_automationrun_changelist",
                query=f"automation__exact={meta['automationId']}&contact__exact={contact.pk}",
            )
        )
    if meta.get("campaignId"):
        links.append(admin_link("campaign", "admin:campaigns_campaign_change", meta["campaignId"]))
    if meta.get("topicId"):
        links.append(admin_link("topic", "admin:owlat_topic_change", meta["topicId"]))
    if meta.get("eventId"):
        links.append(admin_link("event", "admin:owlat_event_change", meta["eventId"]))
    return [link for link in links if link is not None]


def timeline_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    """The newest `limit` activities of `contact` as readable rows (one query)."""
    activities = ContactActivity.objects.filter(contact=contact).order_by("-occurred_at", "-id")[:limit]
    rows = []
    for activity in activities:
        meta = activity.metadata if isinstance(activity.metadata, dict) else {}
        title = TITLES.get(activity.activity_type, activity.activity_type.replace("_", " ").capitalize())
        rows.append(
            TimelineRow(
                when=activity.occurred_at,
                title=title,
                detail=_detail(activity.activity_type, meta),
                links=_links(contact, meta),
            )
        )
    return rows
