"""Who may change a campaign (CMP-11, CMP-12, CMP-18, DOM-02). Every campaign write in `campaigns.services`,
`campaigns.abtest` and `campaigns.review` takes a required `owlat.permissions.Authority` and asks here first, so
the admin, the API and the commands cannot reach a write without a check."""

from __future__ import annotations

from typing import Any

from owlat.lifecycle import Outcome
from owlat.permissions import Authority, authority_allows, platform_authority_allows

#: CMP-18's refusal (DOM-02 gives `campaigns:manage` to owners, admins and editors)
WINNER_FORBIDDEN = "Only owners and admins can declare A/B test winners"
REVIEW_FORBIDDEN = "Only platform staff can review campaigns"


def refusal(organization_id: Any, authority: Authority, permission: str, message: str) -> Outcome | None:
    """`None` when `authority` holds `permission` and the `campaigns` flag is on; else the refusal.

    The authority is checked first: anything but an `Authority` raises `TypeError` (fails closed)."""
    from owlat.flags import feature_disabled_message, flag_enabled

    allowed = authority_allows(authority, permission)
    if organization_id is not None and not flag_enabled(organization_id, "campaigns"):
        return Outcome(ok=False, reason="feature_disabled", message=feature_disabled_message("campaigns"))
    if not allowed:
        return Outcome(ok=False, reason="forbidden", message=message)
    return None


def staff_refusal(authority: Authority) -> Outcome | None:
    """The review queue (CMP-12) is platform staff's: no organization member, no API key."""
    if platform_authority_allows(authority):
        return None
    return Outcome(ok=False, reason="forbidden", message=REVIEW_FORBIDDEN)
