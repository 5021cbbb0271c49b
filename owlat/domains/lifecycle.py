"""The single writer of `Domain.status` (DOM-12, DOM-20), on the kernel's runner (`owlat.lifecycle`, D-04).

    registering ──register──▶ pending ──check ok──▶ verified
                                 │  ◀──────────────────┐│
                                 └──check bad──▶ failed ◀┘ (records gone)
    registering | pending | failed ──staff override──▶ verified

Events (the `input["event"]` of a move):
- `register`: the records to publish and the ownership token are stored (`registering → pending`);
- `check`: a DNS check's results (`dns_checks`) and verdict; `ok → verified` (stamps `last_verified_at`), `bad →
  failed`, `unknown` (DNS errors) keeps the state. A domain verified by the staff override stays verified when
  its records are not (yet) published — the override is for setups without public DNS;
- `override`: platform staff mark the domain verified without DNS (audited). `input["dkim"]` says how it signs:
  `published` (its key's record was found and stamped), `trusted` (staff state the key is published where the
  receivers look, e.g. a private DNS; the key is stamped) or `waived` (verified *without DKIM*:
  `dkim_waived_at` is set and the domain sends unsigned, with warnings, until a check finds the key);
- `records`: the records to publish changed (DKIM rotation; a domain from before verification existed gets its
  token and first key); the state is kept.
Re-checks that keep the state are self-loops the reducer decides (no audit row: the cron runs them every few
hours); every change of state writes an audit row.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from owlat.lifecycle import Audit, Decision, Lifecycle, Outcome
from owlat.models import Domain, DomainStatus

REGISTERING, PENDING, VERIFIED, FAILED = (
    DomainStatus.REGISTERING,
    DomainStatus.PENDING,
    DomainStatus.VERIFIED,
    DomainStatus.FAILED,
)


def check_target(status: str, verdict: str, overridden: bool) -> str:
    """The state a check with `verdict` (ok | bad | unknown) leads to from `status`."""
    if status == REGISTERING:
        return REGISTERING
    if verdict == "ok":
        return VERIFIED
    if verdict == "bad" and not (status == VERIFIED and overridden):
        return FAILED
    return status


class DomainLifecycle(Lifecycle):
    model = Domain
    resource = "domain"
    not_found_reason = "domain_not_found"
    self_loop = "reducer"
    messages = {
        "domain_not_found": "Domain not found",
        "not_registered": "The domain's records are not generated yet; save the domain again.",
        "illegal_edge": "Illegal domain status change",
        "already_verified": "The domain is already verified.",
        "unknown_event": "Unknown domain event",
    }

    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        event = input.get("event")
        if event == "register":
            if (frm, to) != (REGISTERING, PENDING):
                return Decision.refuse("illegal_edge")
            patch = {"status": to, "dns_records": input["records"], "verification_token": input["token"]}
            return Decision.accept(patch, [Audit("domain.registered", {"domain": obj.domain})])
        if event == "records":
            if to != frm:
                return Decision.refuse("illegal_edge")
            audit = input.get("audit")
            patch = {"dns_records": input["records"]}
            if input.get("token"):
                patch["verification_token"] = input["token"]
            return Decision.accept(patch, [Audit(*audit)] if audit else [])
        if event == "override":
            if frm == VERIFIED:
                return Decision.refuse("already_verified")
            if to != VERIFIED:
                return Decision.refuse("illegal_edge")
            dkim = input.get("dkim", "waived")
            patch = {
                "status": to,
                "last_verified_at": at,
                "verification_overridden_at": at,
                "dkim_waived_at": at if dkim == "waived" else None,
            }
            details = {
                "domain": obj.domain,
                "previousStatus": frm,
                "reason": input.get("reason", ""),
                "dkim": dkim,
            }
            return Decision.accept(patch, [Audit("domain.verification_overridden", details)])
        if event == "check":
            if frm == REGISTERING:
                return Decision.refuse("not_registered")
            verdict = input["verdict"]
            if to != check_target(frm, verdict, obj.verification_overridden_at is not None):
                return Decision.refuse("illegal_edge")
            patch: dict[str, Any] = {"status": to, "dns_checks": input["checks"], "last_checked_at": at}
            if "records" in input:
                patch["dns_records"] = input["records"]
            if input.get("dkim_signing"):
                patch["dkim_waived_at"] = None  # a key is published and stamped: the domain signs now
            if verdict == "ok":
                patch["last_verified_at"] = at
                patch["verification_overridden_at"] = None  # DNS confirms it now
            if to == frm:
                return Decision.accept(patch)
            action = "domain.verified" if to == VERIFIED else "domain.verification_failed"
            problems = {k: v["state"] for k, v in input["checks"].items() if v.get("state") != "ok"}
            return Decision.accept(
                patch, [Audit(action, {"domain": obj.domain, "previousStatus": frm, "problems": problems})]
            )
        return Decision.refuse("unknown_event")


def domain_transition(domain: Domain, to: str, *, actor: str, input: dict[str, Any]) -> Outcome:
    """Run one event on `domain` (locked, organization-scoped)."""
    return DomainLifecycle().transition(
        domain.pk, to, actor=actor, input=input, organization_id=domain.organization_id
    )
