"""Topic memberships and double opt-in (DOM-08). This module is the only writer of memberships and of
`Contact.doi_status` (the DOI lifecycle: not_required → pending → confirmed; attestation not_required → confirmed).
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from django.core import signing
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from owlat.models import Contact, ContactTopic, DoiStatus, Topic

DOI_TOKEN_TTL = dt.timedelta(days=7)
SUBSCRIBED, PENDING_DOI, ALREADY_MEMBER = "subscribed", "pending_doi", "already_member"
# DOM-08 unsubscribe effects per source.
_NOTIFYING_SOURCES = frozenset({"public_email_link", "preferences_page"})
TOPIC_FIELDS = ("name", "description", "display_order", "is_default", "require_double_opt_in")


def _bump(topic_id: Any, delta: int) -> None:
    qs = Topic.objects.filter(pk=topic_id)
    if delta < 0:
        qs = qs.filter(cached_member_count__gt=0)
    qs.update(cached_member_count=F("cached_member_count") + delta)


DOI_TOKEN_SALT = "owlat.doi.confirm"


def doi_token_new(contact_id: Any) -> str:
    """A fresh DOI token: random, and signed over the contact id (D-10), so that a link used once can still be
    recognised after confirmation cleared the stored token (DOM-08) — the second click says "already confirmed"."""
    return signing.Signer(salt=DOI_TOKEN_SALT).sign(f"{contact_id}:{secrets.token_urlsafe(16)}")


def doi_token_contact_id(token: str) -> str | None:
    """The contact id a DOI token was issued for, or None if it is not one of ours."""
    try:
        value = signing.Signer(salt=DOI_TOKEN_SALT).unsign(token)
    except signing.BadSignature:
        return None
    return value.rsplit(":", 1)[0] or None


def _start_doi(contact: Contact, *, now: dt.datetime) -> None:
    """Move the contact to `pending` (or refresh an expired token of a pending contact)."""
    token_fields = {
        "doi_confirmation_token": doi_token_new(contact.pk),
        "doi_token_expires_at": now + DOI_TOKEN_TTL,
    }
    if contact.doi_status == DoiStatus.NOT_REQUIRED:
        contact.start_doi(token_fields)
    elif (
        contact.doi_token_expires_at is None
        or contact.doi_token_expires_at <= now
        or not contact.doi_confirmation_token
    ):
        for key, value in token_fields.items():
            setattr(contact, key, value)
    contact.save(update_fields=["doi_status", "doi_confirmation_token", "doi_token_expires_at", "updated_at"])


def topic_subscribe(
    *,
    contact: Contact,
    topic: Topic,
    source: str,
    actor: str,
    force_doi: bool = False,
    skip_doi: bool = False,
    consent_ip: str | None = None,
    consent_user_agent: str | None = None,
    form_confirmed: bool = False,
) -> str:
    """Subscribe; returns `subscribed` (trigger fired), `pending_doi` (DOI started) or `already_member`.
    `form_confirmed`: the address confirmed a sign-up form's link for this membership (`form_confirmed_at`)."""
    from owlat.registry import doi_started_hooks
    from owlat.triggers import fire_trigger

    if contact.organization_id != topic.organization_id:
        raise ValueError("contact and topic belong to different organizations")
    now = timezone.now()
    with transaction.atomic():
        contact = Contact.objects.select_for_update().get(pk=contact.pk)
        if ContactTopic.objects.filter(contact=contact, topic=topic).exists():
            return ALREADY_MEMBER
        needs_doi = (topic.require_double_opt_in or force_doi) and not skip_doi
        pending = needs_doi and contact.doi_status != DoiStatus.CONFIRMED
        try:
            with transaction.atomic():
                ContactTopic.objects.create(
                    organization_id=contact.organization_id,
                    contact=contact,
                    topic=topic,
                    pending_doi_confirmation=pending,
                    consent_source=source,
                    consent_at=now,
                    consent_ip=consent_ip,
                    consent_user_agent=consent_user_agent or "",
                    form_confirmed_at=now if form_confirmed else None,
                )
        except IntegrityError:
            return ALREADY_MEMBER
        _bump(topic.pk, +1)
        if pending:
            _start_doi(contact, now=now)
            for hook in doi_started_hooks():
                hook(str(contact.pk), [str(topic.pk)])
            return PENDING_DOI
        if contact.unsubscribed_at is not None:
            Contact.objects.filter(pk=contact.pk).update(unsubscribed_at=None)
        fire_trigger(
            "topic_subscribed",
            organization_id=contact.organization_id,
            contact_id=contact.pk,
            data={"topicId": str(topic.pk)},
        )
        return SUBSCRIBED


def _unsubscribed_effects(contact: Contact, topic_id: Any, source: str) -> None:
    from owlat.activities import activity_record
    from owlat.webhooks import webhook_emit

    if source in _NOTIFYING_SOURCES:
        activity_record(
            organization_id=contact.organization_id,
            contact_id=contact.pk,
            activity_type="topic_unsubscribed",
            metadata={"topicId": str(topic_id), "source": source},
        )
        webhook_emit(
            organization_id=contact.organization_id,
            event_type="topic.unsubscribed",
            payload={
                "contactId": str(contact.pk),
                "email": contact.email,
                "topicId": str(topic_id),
                "source": source,
            },
        )


def topic_unsubscribe(*, contact: Contact, topic: Topic, source: str, actor: str) -> bool:
    """Remove one membership; returns whether one existed."""
    with transaction.atomic():
        deleted, _ = ContactTopic.objects.filter(contact=contact, topic=topic).delete()
        if not deleted:
            return False
        _bump(topic.pk, -1)
        _unsubscribed_effects(contact, topic.pk, source)
        return True


def contact_unsubscribe_all(
    *, contact: Contact, source: str, actor: str, campaign_send_id: str | None = None
) -> int:
    """Global unsubscribe (DLV-12/21): leave every topic and set `unsubscribed_at`. Returns topics left."""
    from owlat.registry import unsubscribe_hooks

    with transaction.atomic():
        contact = Contact.objects.select_for_update().get(pk=contact.pk)
        topic_ids = list(ContactTopic.objects.filter(contact=contact).values_list("topic_id", flat=True))
        ContactTopic.objects.filter(contact=contact).delete()
        for topic_id in topic_ids:
            _bump(topic_id, -1)
            _unsubscribed_effects(contact, topic_id, source)
        if contact.unsubscribed_at is None:
            Contact.objects.filter(pk=contact.pk).update(unsubscribed_at=timezone.now())
        for hook in unsubscribe_hooks():
            hook(contact, source, campaign_send_id)
        return len(topic_ids)


def _confirmed(contact: Contact, *, now: dt.datetime, source: str) -> None:
    """After `confirm_doi`: fire `topic_subscribed` for each DOI-gated membership and clear the flags."""
    from owlat.activities import activity_record
    from owlat.triggers import fire_trigger

    pending = list(
        ContactTopic.objects.filter(contact=contact, pending_doi_confirmation=True).values_list(
            "pk", "topic_id"
        )
    )
    ContactTopic.objects.filter(pk__in=[pk for pk, _ in pending]).update(pending_doi_confirmation=False)
    for _, topic_id in pending:
        activity_record(
            organization_id=contact.organization_id,
            contact_id=contact.pk,
            activity_type="topic_confirmed",
            metadata={"topicId": str(topic_id), "source": source},
            at=now,
        )
        fire_trigger(
            "topic_subscribed",
            organization_id=contact.organization_id,
            contact_id=contact.pk,
            data={"topicId": str(topic_id)},
        )


def doi_token_is_plausible(token: Any) -> bool:
    """A string that can be looked up at all (no NUL, no lone surrogate, not over the column's length)."""
    if not isinstance(token, str) or not token or len(token) > 128 or "\x00" in token:
        return False
    try:
        token.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def doi_token_contact(token: str, *, organization_id: Any = None) -> Contact | None:
    """The live contact a DOI token was issued to (whatever its state now), or None."""
    contact_id = doi_token_contact_id(token) if doi_token_is_plausible(token) else None
    if contact_id is None:
        return None
    qs = Contact.objects.filter(pk=contact_id, deleted_at__isnull=True)
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    try:
        return qs.first()
    except (ValueError, ValidationError):  # an id of another shape
        return None


def doi_already_confirmed(*, token: str, organization_id: Any = None) -> bool:
    """True if `token` is a DOI link we issued to a contact that is now confirmed (a link used twice)."""
    contact = doi_token_contact(token, organization_id=organization_id)
    return contact is not None and contact.doi_status == DoiStatus.CONFIRMED


def doi_confirm(*, token: str, organization_id: Any = None) -> str:
    """Confirm a double opt-in by its token: `confirmed`, `already_confirmed`, `invalid` or `expired`."""
    now = timezone.now()
    if not doi_token_is_plausible(token):
        return "invalid"
    with transaction.atomic():
        qs = Contact.objects.select_for_update().filter(doi_confirmation_token=token, deleted_at__isnull=True)
        if organization_id is not None:
            qs = qs.filter(organization_id=organization_id)
        contact = qs.first()
        if contact is None:
            if doi_already_confirmed(token=token, organization_id=organization_id):
                return "already_confirmed"
            return "invalid"
        if contact.doi_status != DoiStatus.PENDING:
            return "already_confirmed" if contact.doi_status == DoiStatus.CONFIRMED else "invalid"
        if contact.doi_token_expires_at is not None and contact.doi_token_expires_at <= now:
            return "expired"
        contact.confirm_doi(
            {
                "doi_confirmed_at": now,
                "doi_confirmation_token": None,
                "doi_token_expires_at": None,
                "unsubscribed_at": None,
                "doi_confirmation_source": "email_link",
            }
        )
        contact.save()
        _confirmed(contact, now=now, source="email_link")
        return "confirmed"


def doi_confirm_by_link(*, contact: Contact, source: str) -> bool:
    """A double opt-in confirmed by a link other than the contact's own DOI token — a sign-up form's
    confirmation link, which proves the address as well: `not_required|pending → confirmed`, the token and
    `unsubscribed_at` cleared, DOI-gated memberships released (DOM-08). False when already confirmed."""
    now = timezone.now()
    with transaction.atomic():
        contact = Contact.objects.select_for_update().get(pk=contact.pk)
        if contact.doi_status == DoiStatus.CONFIRMED:
            return False
        contact.confirm_doi(
            {
                "doi_confirmed_at": now,
                "doi_confirmation_token": None,
                "doi_token_expires_at": None,
                "unsubscribed_at": None,
                "doi_confirmation_source": source,
            }
        )
        contact.save()
        _confirmed(contact, now=now, source=source)
        return True


def doi_attest(*, contact: Contact, actor: str, source: str) -> bool:
    """Admin attestation `not_required|pending → confirmed` with a recorded source (DOM-08)."""
    from owlat.activities import activity_record
    from owlat.audit import audit_write

    now = timezone.now()
    with transaction.atomic():
        contact = Contact.objects.select_for_update().get(pk=contact.pk)
        if contact.doi_status == DoiStatus.CONFIRMED:
            return False
        contact.confirm_doi(
            {
                "doi_confirmed_at": now,
                "doi_confirmation_token": None,
                "doi_token_expires_at": None,
                "doi_confirmation_source": source,
            }
        )
        contact.save()
        activity_record(
            organization_id=contact.organization_id,
            contact_id=contact.pk,
            activity_type="doi_attested",
            metadata={"source": source, "actor": actor},
            at=now,
        )
        audit_write(
            organization_id=contact.organization_id,
            actor=actor,
            action="contact.updated",
            resource="contact",
            resource_id=str(contact.pk),
            details={"doiAttested": True, "source": source},
        )
        _confirmed(contact, now=now, source=source)
        return True


def topic_create(*, organization_id: Any, actor: str, **fields: Any) -> Topic:
    """Create a topic (`require_double_opt_in` defaults to true, DOM-08); analytics `topic_created`."""
    from owlat.analytics import capture

    values = {k: v for k, v in fields.items() if k in TOPIC_FIELDS}
    with transaction.atomic():
        topic = Topic.objects.create(organization_id=organization_id, **values)
        capture(distinct_id=actor, event="topic_created", properties={"topicId": str(topic.pk)})
    return topic


def topic_update(*, topic: Topic, changes: dict[str, Any]) -> Topic:
    changed = []
    for key, value in changes.items():
        if key in TOPIC_FIELDS and getattr(topic, key) != value:
            setattr(topic, key, value)
            changed.append(key)
    if changed:
        topic.save(update_fields=[*changed, "updated_at"])
    return topic


def topic_delete(*, topic: Topic) -> None:
    topic.delete()
