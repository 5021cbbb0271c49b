"""Audiences: validation (CMP-02), freezing (CMP-28), paged candidate reads and the eligibility predicate
(CMP-30). Candidates are walked in contact-id order with a keyset cursor, one page at a time; the audience is
never materialized."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet, Value
from django.utils import timezone

from campaigns.models import Campaign
from owlat.models import BlockedEmail, Contact, DoiStatus, Segment, Topic

PAGE_SIZE = 500  # CMP-29 [orig]
_CONTACT_FIELDS = (
    "id",
    "email",
    "first_name",
    "last_name",
    "language",
    "timezone",
    "deleted_at",
    "unsubscribed_at",
    "doi_status",
    "source",
)
#: the source of an inbox correspondent's contact (owlat.contacts; set by the inbox's receive path)
CORRESPONDENT_SOURCE = "inbound"


class AudienceError(ValueError):
    def __init__(self, message: str, field: str = "audience") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def audience_clean(organization_id: Any, raw: Any) -> dict[str, Any] | None:
    """CMP-02: exactly `{"kind": "topic", "topicId"}` or `{"kind": "segment", "segmentId"}` of this org."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise AudienceError("Audience must be an object")
    kind = raw.get("kind")
    if kind == "topic":
        pk = _uuid(raw.get("topicId"))
        if pk is None or not Topic.objects.filter(pk=pk, organization_id=organization_id).exists():
            raise AudienceError("Topic not found", "audience.topicId")
        return {"kind": "topic", "topicId": str(pk)}
    if kind == "segment":
        pk = _uuid(raw.get("segmentId"))
        if pk is None or not Segment.objects.filter(pk=pk, organization_id=organization_id).exists():
            raise AudienceError("Segment not found", "audience.segmentId")
        return {"kind": "segment", "segmentId": str(pk)}
    raise AudienceError('Audience kind must be "topic" or "segment"', "audience.kind")


def audience_frozen(campaign: Campaign, *, at: dt.datetime | None = None) -> dict[str, Any] | None:
    """CMP-28 at send start: a segment audience without `frozenFilters` gets the segment's current filters; a
    topic audience without `frozenAt` gets the instant `at` (its members are then those who joined the topic
    at or before it, so a subscriber joining between the A/B phases is in neither). Frozen audiences and
    deleted segments pass unchanged. Returns the new audience, or None when unchanged."""
    audience = campaign.audience
    if not isinstance(audience, dict):
        return None
    if audience.get("kind") == "topic":
        if "frozenAt" in audience:
            return None
        return {**audience, "frozenAt": (at or timezone.now()).isoformat()}
    if audience.get("kind") != "segment" or "frozenFilters" in audience:
        return None
    segment = Segment.objects.filter(
        pk=_uuid(audience.get("segmentId")), organization_id=campaign.organization_id
    ).first()
    if segment is None:
        return None
    return {**audience, "frozenFilters": segment.filters}


def _frozen_at(audience: dict[str, Any]) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(audience["frozenAt"]))
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Candidate:
    contact_id: str
    email: str
    first_name: str | None
    last_name: str | None
    language: str | None
    timezone: str | None


@dataclass(frozen=True)
class Page:
    eligible: list[Candidate]
    read: int  # candidates read from the audience (before eligibility)
    next_cursor: str
    exhausted: bool
    excluded: dict[str, int] = field(default_factory=dict)  # reason → candidates of this page it excluded


def _candidates(organization_id: Any, audience: dict[str, Any], cursor: str, limit: int) -> QuerySet:
    """The next `limit` candidates after `cursor` in contact-id order, each row `(pending_doi, requires_doi,
    *_CONTACT_FIELDS)` read with its contact (and, for a topic, the topic's DOI flag) in the same query.

    Topic audiences are read from the contact side with the keyset bound on both sides of the join
    (`contact.id > cursor` and `membership.contact_id > cursor`): with the bound on one side only, PostgreSQL's
    merge join scanned the other index from its start, so every page re-read all contacts before the cursor
    (a walk quadratic in the audience size)."""
    after = _uuid(cursor) if cursor else None
    if audience.get("kind") == "topic":
        # one filter() call: conditions on a multi-valued relation in separate calls would join it twice
        bounds: dict[str, Any] = (
            {"pk__gt": after, "topic_memberships__contact_id__gt": after} if after else {}
        )
        frozen_at = _frozen_at(audience)
        if frozen_at is not None:
            bounds["topic_memberships__added_at__lte"] = frozen_at
        qs = Contact.objects.filter(
            organization_id=organization_id,
            topic_memberships__topic_id=_uuid(audience.get("topicId")),
            topic_memberships__organization_id=organization_id,
            **bounds,
        )
        return qs.order_by("pk").values_list(
            "topic_memberships__pending_doi_confirmation",
            "topic_memberships__topic__require_double_opt_in",
            *_CONTACT_FIELDS,
        )[:limit]
    from owlat.conditions import filters_queryset_safe

    filters = audience.get("frozenFilters")
    if filters is None:
        segment = Segment.objects.filter(
            pk=_uuid(audience.get("segmentId")), organization_id=organization_id
        ).first()
        filters = segment.filters if segment else None
    if filters is None:  # a deleted segment resolves to nobody
        qs = Contact.objects.none()
    else:
        qs = filters_queryset_safe(organization_id, filters, warn=True, context=f"audience {audience}")
    if after:
        qs = qs.filter(pk__gt=after)
    return qs.order_by("pk").values_list(Value(False), Value(False), *_CONTACT_FIELDS)[:limit]


def _blocked(organization_id: Any, emails: list[str]) -> set[str]:
    """Which of `emails` (normalized) are suppressed (DLV-12)."""
    if not emails:
        return set()
    return set(
        BlockedEmail.objects.filter(organization_id=organization_id, email__in=emails).values_list(
            "email", flat=True
        )
    )


def correspondents(organization_id: Any, rows: list[dict[str, Any]]) -> set[str]:
    """Ids among `rows` (candidate values) of inbox correspondents: contacts the inbox created for a sender
    (source `inbound`) that never joined a topic. A segment's filters may match them; they are no marketing
    audience (AGT-02 as decided). One query, only when the page holds such contacts."""
    from owlat.models import ContactTopic

    inbound = [c["id"] for c in rows if c.get("source") == CORRESPONDENT_SOURCE]
    if not inbound:
        return set()
    subscribed = set(
        ContactTopic.objects.filter(organization_id=organization_id, contact_id__in=inbound).values_list(
            "contact_id", flat=True
        )
    )
    return {str(pk) for pk in inbound if pk not in subscribed}


def audience_page(
    organization_id: Any, audience: dict[str, Any], cursor: str, *, limit: int = PAGE_SIZE
) -> Page:
    """Read one page of candidates and apply CMP-30 in order: live → has an email → not suppressed →
    not unsubscribed → (topic audiences) DOI confirmed/not required when the topic requires DOI → (topic
    audiences) membership not pending DOI."""
    from owlat.contacts import normalize_email

    rows = [
        (bool(pending), bool(requires), dict(zip(_CONTACT_FIELDS, rest, strict=True)))
        for pending, requires, *rest in _candidates(organization_id, audience, cursor, limit + 1)
    ]
    # one row past the page tells whether another page follows, so the walk ends on its last full page
    # instead of reading an empty one
    exhausted = len(rows) <= limit
    rows = rows[:limit]
    if not rows:
        return Page([], 0, cursor, True)
    next_cursor = str(rows[-1][2]["id"])
    is_topic = audience.get("kind") == "topic"
    requires_doi = is_topic and rows[0][1]  # the topic's flag, read with the page
    blocked = _blocked(
        organization_id, sorted({normalize_email(c["email"]) for _, _, c in rows if c["email"]})
    )
    inbox_only = set() if is_topic else correspondents(organization_id, [c for _, _, c in rows])
    eligible: list[Candidate] = []
    excluded: dict[str, int] = {}
    for pending, _, c in rows:
        reason = exclusion_reason(
            c,
            blocked=blocked,
            is_topic=is_topic,
            requires_doi=requires_doi,
            pending=pending,
            correspondent=str(c["id"]) in inbox_only,
        )
        if reason:
            excluded[reason] = excluded.get(reason, 0) + 1
            continue
        eligible.append(
            Candidate(
                str(c["id"]),
                c["email"].strip(),
                c["first_name"],
                c["last_name"],
                c["language"],
                c["timezone"],
            )
        )
    return Page(eligible, len(rows), next_cursor, exhausted, excluded)


#: why a candidate of the audience gets no message, in the order CMP-30 tests them
EXCLUSION_REASONS = {
    "deleted": "deleted",
    "no_email": "no email address",
    "suppressed": "suppressed (bounced, complained or blocked)",
    "unsubscribed": "unsubscribed",
    "correspondent": "an inbox correspondent (wrote to the inbox, never joined a topic)",
    "doi_unconfirmed": "double opt-in not confirmed (the topic requires it)",
    "membership_pending": "topic membership waiting for its double opt-in confirmation",
}


def exclusion_reason(
    c: dict[str, Any],
    *,
    blocked: set[str],
    is_topic: bool,
    requires_doi: bool,
    pending: bool,
    correspondent: bool = False,
) -> str | None:
    """CMP-30 for one candidate (`_CONTACT_FIELDS` values): the first rule that excludes it, None when eligible.
    The one definition the walk and the audience explanation share."""
    from owlat.contacts import normalize_email

    if c["deleted_at"] is not None:
        return "deleted"
    email = (c["email"] or "").strip()
    if not email:
        return "no_email"
    if normalize_email(email) in blocked:
        return "suppressed"
    if c["unsubscribed_at"] is not None:
        return "unsubscribed"
    if correspondent:
        return "correspondent"
    if is_topic:
        if requires_doi and c["doi_status"] not in (DoiStatus.CONFIRMED, DoiStatus.NOT_REQUIRED):
            return "doi_unconfirmed"
        if pending:
            return "membership_pending"
    return None


def audience_eligible_count(
    organization_id: Any, audience: dict[str, Any] | None, *, cap: int = 100_000
) -> int:
    """The live eligible-recipient count for the admin (walks pages up to `cap` candidates)."""
    if not isinstance(audience, dict) or audience.get("kind") not in ("topic", "segment"):
        return 0
    total, cursor, read = 0, "", 0
    while read < cap:
        page = audience_page(organization_id, audience, cursor, limit=2000)
        total += len(page.eligible)
        read += page.read
        cursor = page.next_cursor
        if page.exhausted:
            break
    return total
