"""What a pool job reads for one round of claimed rows (delivery.worker): the rows with the templates
and organizations composing needs, and the checks made again at dispatch — campaign send settings, the
blocklist and unsubscribed contacts (DLV-13, D-11) — and the automations' mail options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from delivery.lifecycle import WEBHOOK_ENDPOINTS_ATTR, model_for
from delivery.mail_options import automation_mail_options
from delivery.models import CampaignSendSettings

SUPPRESSED_CODE = "RECIPIENT_SUPPRESSED"
SUPPRESSED_MESSAGE = "Recipient suppressed (blocklist) before dispatch"
UNSUBSCRIBED_MESSAGE = "Recipient unsubscribed before dispatch"


@dataclass
class Round:
    """One round of a pool job: its claimed rows (`load_rows`) and what is checked against them at dispatch —
    the campaign send settings by campaign id, the suppressed addresses and unsubscribed contacts (DLV-13, D-11)
    and the automations' mail options."""

    rows: list[Any]
    contexts: dict[str, Any] = field(default_factory=dict)
    blocked: set[str] = field(default_factory=set)
    unsubscribed: set[str] = field(default_factory=set)
    mail_options: dict[str, Any] = field(default_factory=dict)

    def refusal(self, row: Any) -> str | None:
        """Why the row must not be sent (its error message, code RECIPIENT_SUPPRESSED), or None."""
        if blocked_key(row) in self.blocked:
            return SUPPRESSED_MESSAGE
        if row.contact_id and str(row.contact_id) in self.unsubscribed and marketing_scope(row):  # D-11
            return UNSUBSCRIBED_MESSAGE
        return None


def read_round(
    kind: str, ids: list[str], token: Any, cache: dict[Any, dict[Any, Any]], *, join: bool = False
) -> Round:
    """The claimed rows of one round (`load_rows`) and what one round reads for them (see `Round`)."""
    rows = load_rows(kind, ids, token, cache, join=join)
    contexts: dict[str, Any] = {}
    if kind == "campaign":
        campaign_ids = {r.campaign_id for r in rows}
        contexts = {
            str(c.campaign_id): c for c in CampaignSendSettings.objects.filter(campaign_id__in=campaign_ids)
        }
    blocked, unsubscribed = suppressed_sets(rows, kind)
    mail_options = automation_mail_options(
        (r.organization_id, r.automation_id) for r in rows if getattr(r, "kind", None) == "automation"
    )
    return Round(rows, contexts, blocked, unsubscribed, mail_options)


def load_rows(
    kind: str,
    ids: list[str],
    token: Any,
    cache: dict[Any, dict[Any, Any]] | None = None,
    *,
    join: bool = False,
) -> list[Any]:
    """The claimed rows with what composing reads. The templates and organizations a batch shares are loaded
    once each and attached to every row (a join would build them, JSON fields and all, once per row); `cache`
    keeps them for the job's next rounds. With `join` (a small load: the worker's RECORD_INLINE_ROWS rows at
    most) they come with the rows instead (fewer statements for the small jobs a walker keeping up with the API
    makes). Each row carries `WEBHOOK_ENDPOINTS_ATTR`: whether its organization has an active webhook endpoint
    (read in this statement, used when its result is recorded). Attachments are read only for the rows that may have some (kind
    `transactional`; automation mail has none)."""
    from django.db.models import Exists, OuterRef, prefetch_related_objects

    from owlat.models import Organization, WebhookEndpoint
    from templates.models import EmailTemplate

    model = model_for(kind)
    # Whether the row's organization has an active webhook endpoint, read with the rows: the recording's
    # webhook effect uses it instead of a query of its own per job (delivery.lifecycle.effects).
    qs = model.objects.filter(pk__in=ids, claim_token=token).annotate(
        **{
            WEBHOOK_ENDPOINTS_ATTR: Exists(
                WebhookEndpoint.objects.filter(organization_id=OuterRef("organization_id"), is_active=True)
            )
        }
    )
    shared: list[tuple[str, Any]] = [("email_template", EmailTemplate), ("organization", Organization)]
    if kind != "campaign":
        from templates.models import TransactionalEmail

        qs = qs.select_related("contact")
        shared.append(("transactional_email", TransactionalEmail))
    cache = {} if cache is None else cache
    joined: set[str] = set()
    if join:
        # A small job: its few rows' templates and organizations come with the rows (one statement instead of
        # one more per shared model; built once per row, which for a handful of rows costs less).
        joined = {name for name, related_model in shared if not cache.get(related_model)}
        qs = qs.select_related(*joined)
    rows = list(qs)
    if kind != "campaign":
        with_files = [row for row in rows if row.kind == "transactional"]
        if with_files:
            prefetch_related_objects(with_files, "attachments")
    for field_name, related_model in shared:
        attname = f"{field_name}_id"
        loaded = cache.setdefault(related_model, {})
        if field_name in joined:
            for row in rows:  # joined: kept for the job's next rounds, one instance per pk
                related = row._state.fields_cache.get(field_name)
                if related is not None:
                    loaded.setdefault(related.pk, related)
        wanted = [pk for pk in {getattr(row, attname) for row in rows} - {None} if pk not in loaded]
        if wanted:
            loaded.update(related_model._default_manager.in_bulk(wanted))
        for row in rows:
            related = loaded.get(getattr(row, attname))
            if related is not None:
                setattr(row, field_name, related)
    order = {pk: i for i, pk in enumerate(ids)}
    return sorted(rows, key=lambda r: order.get(str(r.pk), 0))


def suppressed_sets(rows: list[Any], kind: str) -> tuple[set[str], set[str]]:
    """(suppressed addresses, unsubscribed contact ids) for the batch (DLV-13, D-11): the blocklist rows of the
    batch's addresses in one query (a marketing-only reason suppresses only the marketing-scope rows'
    addresses), the unsubscribed contacts from the contacts loaded with the rows (one more query for
    campaign rows)."""
    from owlat.models import Contact

    if not rows:
        return set(), set()
    blocked = blocked_addresses(rows)
    marketing = [r for r in rows if marketing_scope(r) and r.contact_id]
    if kind != "campaign":  # the contact was read with the claimed row a moment ago (`load_rows`)
        return blocked, {str(r.contact_id) for r in marketing if r.contact.unsubscribed_at is not None}
    unsubscribed = {
        str(pk)
        for pk in Contact.objects.filter(
            pk__in=[r.contact_id for r in marketing], unsubscribed_at__isnull=False
        ).values_list("pk", flat=True)
    }
    return blocked, unsubscribed


def blocked_addresses(rows: list[Any]) -> set[str]:
    """`blocked_key(row)` of the rows whose address is on their organization's blocklist for the row's scope:
    any reason for marketing-scope rows, reasons other than the marketing-only ones for the rest (D-11; a job may
    hold both scopes for one address, and a marketing-only reason then suppresses only the marketing mail). One query (a blocklist row is unique per organization and
    address)."""
    from owlat.contacts import normalize_email
    from owlat.models import BlockedEmail
    from owlat.suppression import MARKETING_ONLY_REASONS

    scopes: dict[tuple[str, str], set[bool]] = {}
    for row in rows:
        key = (str(row.organization_id), normalize_email(row.recipient or ""))
        scopes.setdefault(key, set()).add(marketing_scope(row))
    org_ids = sorted({org for org, _ in scopes})
    emails = sorted({email for _, email in scopes})
    found = BlockedEmail.objects.filter(organization_id__in=org_ids, email__in=emails).values_list(
        "organization_id", "email", "reason"
    )
    blocked: set[str] = set()
    for org_id, email, reason in found:
        for marketing in scopes.get((str(org_id), email), ()):
            if marketing or reason not in MARKETING_ONLY_REASONS:
                blocked.add(_scope_key(org_id, email, marketing))
    return blocked


def _scope_key(organization_id: Any, email: str, marketing: bool) -> str:
    return f"{organization_id}:{email}:{'marketing' if marketing else 'transactional'}"


def blocked_key(row: Any) -> str:
    """The key `_blocked_addresses` gives a row: its organization, normalized address and scope."""
    from owlat.contacts import normalize_email

    return _scope_key(row.organization_id, normalize_email(row.recipient or ""), marketing_scope(row))


def marketing_scope(row: Any) -> bool:
    """Campaign and automation mail are marketing (DLV-13, D-11); the rest is transactional scope."""
    return row.send_kind in ("campaign", "automation")
