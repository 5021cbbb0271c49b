"""Explain a campaign's audience to an operator: who would receive it now and why the others would not — counts
per exclusion rule over the whole audience, and for one contact the rule that excludes them (not in the topic or
segment, deleted, no email, suppressed, unsubscribed, double opt-in pending, already sent). Read-only: nothing is
sent or written. The rules are `campaigns.audience.exclusion_reason`, the same the send walk applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from campaigns.audience import (
    _CONTACT_FIELDS,
    EXCLUSION_REASONS,
    _blocked,
    _frozen_at,
    _uuid,
    audience_page,
    correspondents,
    exclusion_reason,
)
from campaigns.models import Campaign
from owlat.models import Contact, ContactTopic, Segment

#: the most candidates the breakdown reads (the page says so when it stops there)
BREAKDOWN_CAP = 100_000


@dataclass(frozen=True)
class AudienceBreakdown:
    candidates: int
    eligible: int
    excluded: list[tuple[str, str, int]]  # (reason, label, count), in rule order
    capped: bool


@dataclass(frozen=True)
class ContactExplanation:
    eligible: bool
    reason: str  # "eligible" | "not_in_audience" | "already_sent" | an EXCLUSION_REASONS key
    text: str


def audience_breakdown(campaign: Campaign, *, cap: int = BREAKDOWN_CAP) -> AudienceBreakdown:
    """Walk the audience as a send would now (pages of 2,000, up to `cap` candidates) and count each rule."""
    audience = campaign.audience if isinstance(campaign.audience, dict) else None
    read = eligible = 0
    excluded: dict[str, int] = {}
    cursor, exhausted = "", audience is None
    while not exhausted and read < cap:
        page = audience_page(campaign.organization_id, audience or {}, cursor, limit=2000)
        read += page.read
        eligible += len(page.eligible)
        for reason, n in page.excluded.items():
            excluded[reason] = excluded.get(reason, 0) + n
        cursor, exhausted = page.next_cursor, page.exhausted
    lines = [(r, label, excluded[r]) for r, label in EXCLUSION_REASONS.items() if excluded.get(r)]
    return AudienceBreakdown(read, eligible, lines, not exhausted)


def _membership(campaign: Campaign, audience: dict[str, Any], contact: Contact) -> tuple[bool, bool, bool]:
    """(in the audience, membership pending DOI, the topic requires DOI) for one contact."""
    if audience.get("kind") == "topic":
        rows = ContactTopic.objects.filter(
            organization_id=campaign.organization_id, contact=contact, topic_id=_uuid(audience.get("topicId"))
        )
        frozen_at = _frozen_at(audience)
        if frozen_at is not None:
            rows = rows.filter(added_at__lte=frozen_at)
        row = rows.values_list("pending_doi_confirmation", "topic__require_double_opt_in").first()
        return (row is not None, bool(row and row[0]), bool(row and row[1]))
    from owlat.conditions import filters_queryset_safe

    filters = audience.get("frozenFilters")
    if filters is None:
        segment = Segment.objects.filter(
            pk=_uuid(audience.get("segmentId")), organization_id=campaign.organization_id
        ).first()
        filters = segment.filters if segment else None
    if filters is None:
        return (False, False, False)
    members = filters_queryset_safe(campaign.organization_id, filters).filter(pk=contact.pk)
    return (members.exists(), False, False)


def audience_explain(campaign: Campaign, contact: Contact) -> ContactExplanation:
    """Why `contact` (of the campaign's organization) would or would not receive the campaign now."""
    from delivery.models import EmailSend
    from owlat.contacts import normalize_email

    audience = campaign.audience if isinstance(campaign.audience, dict) else None
    if audience is None or audience.get("kind") not in ("topic", "segment"):
        return ContactExplanation(False, "not_in_audience", "The campaign has no audience yet.")
    is_topic = audience["kind"] == "topic"
    member, pending, requires_doi = _membership(campaign, audience, contact)
    if not member:
        where = "a member of the campaign's topic" if is_topic else "matched by the campaign's segment"
        return ContactExplanation(
            False, "not_in_audience", f"Not in the audience: the contact is not {where}."
        )
    values = {name: getattr(contact, name) for name in _CONTACT_FIELDS}
    email = normalize_email(contact.email) if contact.email else ""
    blocked = _blocked(campaign.organization_id, [email] if email else [])
    correspondent = not is_topic and bool(correspondents(campaign.organization_id, [values]))
    reason = exclusion_reason(
        values,
        blocked=blocked,
        is_topic=is_topic,
        requires_doi=requires_doi,
        pending=pending,
        correspondent=correspondent,
    )
    if reason:
        return ContactExplanation(False, reason, f"Excluded — {EXCLUSION_REASONS[reason]}.")
    row = (
        EmailSend.objects.filter(
            organization_id=campaign.organization_id, campaign_id=campaign.pk, contact_id=contact.pk
        )
        .values_list("status", flat=True)
        .first()
    )
    if row is not None:
        return ContactExplanation(
            False, "already_sent", f"Already has a send of this campaign ({row}); a contact is sent it once."
        )
    return ContactExplanation(True, "eligible", "Would receive the campaign.")
