"""Sending-domain verification (DOM-12): register a domain (token, first DKIM key, the records
to publish), check it against DNS now (admin "Check now", `manage.py verify_domains`, the cron re-check), the
audited staff override for local setups, and the 24 h stale warning. Every status change goes through
`owlat.domains.lifecycle`. A domain name is verified by one organization at most: a check or an override that would
verify a name another organization holds verified is refused (`claimed_elsewhere`)."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from owlat.domains import checks, keys
from owlat.domains.lifecycle import PENDING, REGISTERING, VERIFIED, check_target, domain_transition
from owlat.domains.records import expected_records
from owlat.lifecycle import Outcome
from owlat.models import Domain

logger = logging.getLogger(__name__)

CRON_ACTOR = "system:domain-recheck"


CLAIMED = "claimed_elsewhere"


def claimed_message(name: str) -> str:
    return (
        f"{name} is verified by another organization on this installation; a domain can be verified by one "
        "organization only. If the domain is yours, ask platform staff to look into it."
    )


def domain_claimed_elsewhere(*, domain: str, organization_id: Any) -> bool:
    """Another organization has this domain name verified."""
    return (
        Domain.objects.filter(domain=domain, status=VERIFIED)
        .exclude(organization_id=organization_id)
        .exists()
    )


def _verify_unless_claimed(locked: Domain, to: str, *, actor: str, input: dict[str, Any]) -> Outcome:
    """`domain_transition`, except that a move to `verified` of a name another organization has verified is
    refused (`claimed_elsewhere`) — also when the two race (the unique constraint `uniq_verified_domain`)."""
    refused = Outcome(
        ok=False,
        reason=CLAIMED,
        message=claimed_message(locked.domain),
        from_state=locked.status,
        to_state=locked.status,
        object_id=locked.pk,
    )
    if to == VERIFIED and locked.status != VERIFIED:
        if domain_claimed_elsewhere(domain=locked.domain, organization_id=locked.organization_id):
            return refused
        try:
            with transaction.atomic():
                return domain_transition(locked, to, actor=actor, input=input)
        except IntegrityError:
            return refused
    return domain_transition(locked, to, actor=actor, input=input)


def _records(domain: Domain) -> list[dict[str, str]]:
    return expected_records(domain.domain, domain.verification_token, keys.live_keys(domain))


def domain_register(domain: Domain, *, actor: str) -> Outcome:
    """`registering → pending`: an ownership token, a first DKIM key, the records to publish. Idempotent: a
    registered domain is left as it is."""
    with transaction.atomic():
        locked = Domain.objects.select_for_update().get(pk=domain.pk, organization_id=domain.organization_id)
        if locked.status != REGISTERING:
            return Outcome(ok=True, applied="duplicate", from_state=locked.status, to_state=locked.status)
        if not keys.live_keys(locked):
            keys.dkim_key_create(locked)
        token = locked.verification_token or secrets.token_hex(16)
        records = expected_records(locked.domain, token, keys.live_keys(locked))
        return domain_transition(
            locked, PENDING, actor=actor, input={"event": "register", "records": records, "token": token}
        )


def domain_check(domain: Domain, *, actor: str) -> Outcome:
    """Query DNS for every record and move the domain by the verdict (see `lifecycle`). DKIM keys whose record
    is published are stamped verified; a newer verified key retires the older ones (rotation overlap ends)."""
    if domain.status == REGISTERING:
        domain_register(domain, actor=actor)
        domain.refresh_from_db()
    elif not domain.verification_token or not keys.live_keys(domain):
        _complete_legacy(domain, actor=actor)
        domain.refresh_from_db()
    wanted = _records(domain)
    results = checks.check_records(wanted)  # network I/O outside any transaction
    now = timezone.now()
    with transaction.atomic():
        locked = Domain.objects.select_for_update().get(pk=domain.pk, organization_id=domain.organization_id)
        published = [
            r["key"].split(":", 1)[1]
            for r in wanted
            if r["kind"] == "dkim" and results[r["key"]]["state"] == checks.OK
        ]
        keys.dkim_keys_mark_verified(locked, published, at=now)
        signs = keys.signing_key(keys.live_keys(locked)) is not None
        records = _records(locked)
        current = {r["key"] for r in records}
        stamped = {k: {**v, "checkedAt": now.isoformat()} for k, v in results.items() if k in current}
        verdict = checks.verdict(records, stamped)
        to = check_target(locked.status, verdict, locked.verification_overridden_at is not None)
        return _verify_unless_claimed(
            locked,
            to,
            actor=actor,
            input={
                "event": "check",
                "verdict": verdict,
                "checks": stamped,
                "records": records,
                "dkim_signing": signs,
            },
        )


def _complete_legacy(domain: Domain, *, actor: str) -> None:
    """A domain added before verification existed (or by hand): give it its token and first DKIM key."""
    with transaction.atomic():
        locked = Domain.objects.select_for_update().get(pk=domain.pk, organization_id=domain.organization_id)
        if not keys.live_keys(locked):
            keys.dkim_key_create(locked)
        token = locked.verification_token or secrets.token_hex(16)
        records = expected_records(locked.domain, token, keys.live_keys(locked))
        domain_transition(
            locked, locked.status, actor=actor, input={"event": "records", "records": records, "token": token}
        )


DKIM_CHECK, DKIM_TRUST = "check", "trust"


def domain_override(domain: Domain, *, actor: str, reason: str = "", dkim: str = DKIM_CHECK) -> Outcome:
    """Platform staff only (the caller checks): mark verified without DNS, for local setups; audited.

    The override never leaves a verified domain silently unsigned. `dkim="check"` looks the DKIM records up:
    a published key is stamped and signs; none published → the domain is verified *without DKIM* (it sends
    unsigned, the pre-flight and the dashboard warn). `dkim="trust"`: staff state the key is published where
    the receivers look (a private DNS, a test setup): the newest key is stamped without a lookup."""
    if domain.status == REGISTERING:
        domain_register(domain, actor=actor)
        domain.refresh_from_db()
    elif not domain.verification_token or not keys.live_keys(domain):
        _complete_legacy(domain, actor=actor)
        domain.refresh_from_db()
    published: list[str] = []
    if dkim != DKIM_TRUST:
        wanted = [r for r in _records(domain) if r["kind"] == "dkim"]
        results = checks.check_records(wanted)  # network I/O outside any transaction
        published = [r["key"].split(":", 1)[1] for r in wanted if results[r["key"]]["state"] == checks.OK]
    now = timezone.now()
    with transaction.atomic():
        locked = Domain.objects.select_for_update().get(pk=domain.pk, organization_id=domain.organization_id)
        if locked.status == VERIFIED:
            return _verify_unless_claimed(locked, VERIFIED, actor=actor, input={"event": "override"})
        if dkim == DKIM_TRUST:
            newest = keys.live_keys(locked)[-1:]
            published = [k.selector for k in newest]
        outcome = _verify_unless_claimed(
            locked,
            VERIFIED,
            actor=actor,
            input={
                "event": "override",
                "reason": reason,
                "dkim": ("trusted" if dkim == DKIM_TRUST else "published") if published else "waived",
            },
        )
        if outcome.ok and published:
            keys.dkim_keys_mark_verified(locked, published, at=now)
        return outcome


def domain_rotate_dkim(domain: Domain, *, actor: str) -> tuple[Outcome, str]:
    """A new DKIM key published next to the current one; the current one keeps signing until the new record
    verifies. Returns the outcome and the new selector."""
    with transaction.atomic():
        locked = Domain.objects.select_for_update().get(pk=domain.pk, organization_id=domain.organization_id)
        key = keys.dkim_key_create(locked)
        if locked.status == REGISTERING:
            return domain_register(locked, actor=actor), key.selector
        audit = ("domain.dkim_key_created", {"domain": locked.domain, "selector": key.selector})
        outcome = domain_transition(
            locked,
            locked.status,
            actor=actor,
            input={"event": "records", "records": _records(locked), "audit": audit},
        )
        return outcome, key.selector


# --- staleness (DOM-12: a warning, not a state) ------------------------------------------------------------


def stale_after() -> dt.timedelta:
    return dt.timedelta(hours=settings.DOMAIN_VERIFICATION_STALE_HOURS)


def is_stale(domain: Domain, now: dt.datetime | None = None) -> bool:
    """A verified domain whose last successful verification is older than 24 h (the re-check could not
    confirm it since, e.g. DNS errors)."""
    if domain.status != VERIFIED or domain.verification_overridden_at is not None:
        return False
    last = domain.last_verified_at
    return last is None or last < (now or timezone.now()) - stale_after()


def stale_warning(domain: Domain, now: dt.datetime | None = None) -> str | None:
    if not is_stale(domain, now):
        return None
    when = domain.last_verified_at.strftime("%Y-%m-%d %H:%M UTC") if domain.last_verified_at else "never"
    return (
        f'Verification of "{domain.domain}" is stale (last confirmed {when}); '
        "check its DNS records now (Settings > Domains > Check now)."
    )


# --- the re-check (cron and command) --------------------------------------------------------------------------


@dataclass
class RecheckSummary:
    checked: int = 0
    changed: list[str] | None = None
    stale: list[str] | None = None

    def lines(self) -> list[str]:
        return [*(self.changed or []), *(self.stale or []), f"{self.checked} domain(s) checked"]


def domains_recheck(queryset: Any = None, *, actor: str = CRON_ACTOR) -> RecheckSummary:
    """Check every domain of `queryset` (default: all); log a warning for each stale verification."""
    summary = RecheckSummary(changed=[], stale=[])
    qs = queryset if queryset is not None else Domain.objects.all()
    for domain in qs.order_by("organization_id", "domain").iterator():
        try:
            outcome = domain_check(domain, actor=actor)
        except Domain.DoesNotExist:
            continue  # deleted while the re-check ran
        except Exception:  # one domain's failure must not stop the others' re-check
            logger.exception("re-check of sending domain %s failed", domain.domain)
            summary.changed.append(f"{domain.domain}: the check failed (see the log)")
            continue
        summary.checked += 1
        if outcome.ok and outcome.from_state != outcome.to_state:
            summary.changed.append(f"{domain.domain}: {outcome.from_state} → {outcome.to_state}")
        elif not outcome.ok:
            summary.changed.append(f"{domain.domain}: {outcome.message}")
        domain.refresh_from_db()
        warning = stale_warning(domain)
        if warning:
            summary.stale.append(warning)
            logger.warning(warning)
    return summary


def domains_recheck_task() -> str:
    """The cron re-check (django-q2 schedule in `owlat.kernel_schedules`); idempotent."""
    return "; ".join(domains_recheck().lines())
