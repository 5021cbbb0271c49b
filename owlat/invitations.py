"""Membership by invitation (DOM-02): adding a person to an organization offers them a membership they accept.

An invitation names its invitee as the inviter typed it (a username or an email address). Whether an account
answers to that name is never told to the inviter: every invitation gets the same answer, and nothing about any
account (its memberships, `is_staff`) changes until the holder of the matching account, signed in, accepts it on
`/invitations/` (reached from the email link, or shown when they sign in). Accepting makes the membership, gives
the admin access members need (D-12: `is_staff`, no model permissions) and makes the organization the one they
land in. Invitations expire after `INVITATION_MAX_AGE_DAYS`.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from owlat.lifecycle import Audit, Decision, Lifecycle
from owlat.models import Invitation, InvitationStatus, Membership, Role

logger = logging.getLogger(__name__)

TOKEN_SALT = "owlat.invitation"
#: the session's count of invitations waiting, taken when the user signs in (the admin header shows it)
SESSION_WAITING = "owlat_invitations_waiting"
ANSWER = (
    "Invitation for {invitee} recorded: they see it when they next sign in, and get an email link when their "
    "address is known. Nothing changes for them until they accept."
)


class InvitationLifecycle(Lifecycle):
    """The single writer of `Invitation.status`: a pending invitation is accepted or declined by its holder."""

    model = Invitation
    resource = "invitation"
    not_found_reason = "invitation_not_found"
    self_loop = "reducer"
    messages = {
        "invitation_not_found": "Invitation not found",
        "illegal_edge": "This invitation has already been answered.",
    }

    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        if frm != InvitationStatus.PENDING or to not in (
            InvitationStatus.ACCEPTED,
            InvitationStatus.DECLINED,
        ):
            return Decision.refuse("illegal_edge")
        patch: dict[str, Any] = {"status": to, "responded_at": at}
        if to == InvitationStatus.ACCEPTED:
            patch["accepted_by_id"] = input["user_id"]
        return Decision.accept(patch, [Audit(f"invitation.{to}", {"invitee": obj.invitee, "role": obj.role})])


INVITATIONS = InvitationLifecycle()


class InvitationError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def max_age() -> dt.timedelta:
    return dt.timedelta(days=getattr(settings, "INVITATION_MAX_AGE_DAYS", 14))


def normalize_invitee(value: str) -> str:
    value = (value or "").strip()
    return value.lower() if "@" in value else value


def _accounts(invitee: str) -> QuerySet:
    return get_user_model().objects.filter(Q(username=invitee) | Q(email__iexact=invitee), is_active=True)


def invitation_create(*, organization: Any, invitee: str, role: str, invited_by: Any) -> Invitation:
    """Record (or renew) the pending invitation of `invitee` and queue its email link after commit. The caller
    answers `ANSWER` whatever happens here, account or not."""
    from owlat.audit import audit_write

    invitee = normalize_invitee(invitee)
    if not invitee or len(invitee) > 254:
        raise InvitationError("Enter a username or an email address (at most 254 characters).")
    if role not in Role.values:
        raise InvitationError(f"Pick a role: {', '.join(Role.values)}.")
    with transaction.atomic():
        invitation, created = Invitation.objects.select_for_update().get_or_create(
            organization=organization,
            invitee=invitee,
            status=InvitationStatus.PENDING,
            defaults={"role": role, "invited_by": invited_by},
        )
        if not created:  # invited again: the new role, and the link's lifetime starts again
            Invitation.objects.filter(pk=invitation.pk).update(
                role=role, invited_by=invited_by, created_at=timezone.now()
            )
            invitation.refresh_from_db()
        audit_write(
            organization_id=organization.pk,
            actor=str(getattr(invited_by, "pk", "") or "system"),
            action="member.invited",
            resource="invitation",
            resource_id=str(invitation.pk),
            details={"invitee": invitee, "role": role},
        )
        transaction.on_commit(lambda: invitation_mail(invitation))
    return invitation


def invitation_token(invitation: Invitation) -> str:
    return signing.dumps(str(invitation.pk), salt=TOKEN_SALT)


def invitation_from_token(token: str) -> Invitation | None:
    try:
        pk = signing.loads(token, salt=TOKEN_SALT, max_age=max_age())
    except signing.BadSignature:
        return None
    return Invitation.objects.filter(pk=pk).select_related("organization").first()


def invitation_mail(invitation: Invitation) -> str | None:
    """Queue the email link to the invitee's address, when one is known (typed, or the account's)."""
    from owlat.registry import system_mail_senders

    address = invitation.invitee if "@" in invitation.invitee else None
    if address is None:
        account = _accounts(invitation.invitee).exclude(email="").first()
        address = account.email if account is not None else None
    if address is None:
        return None
    link = f"{settings.SITE_URL.rstrip('/')}/invitations/{invitation_token(invitation)}/"
    text = (
        f"You are invited to join {invitation.organization.name} on Owlat as {invitation.role}.\n\n"
        f"Open this link and sign in to accept or decline (it works for {max_age().days} days):\n{link}\n\n"
        "Nothing changes for your account unless you accept. If you have no account on this installation, "
        "ask its operators for one, or ignore this mail."
    )
    for sender in system_mail_senders():
        try:
            return sender(
                organization_id=invitation.organization_id,
                to=address,
                subject=f"Invitation to {invitation.organization.name}",
                text=text,
                correlation_id="invitation",
            )
        except Exception:
            logger.exception("invitation %s: the email link could not be queued", invitation.pk)
    return None


def _matches(invitation: Invitation, user: Any) -> bool:
    invitee = invitation.invitee
    return invitee == user.get_username() or bool(user.email and invitee == user.email.lower())


def invitations_for(user: Any) -> QuerySet:
    """The pending, unexpired invitations addressed to `user`'s username or email address."""
    if user is None or not user.is_authenticated or not user.is_active:
        return Invitation.objects.none()
    names = Q(invitee=user.get_username())
    if user.email:
        names |= Q(invitee=user.email.lower())
    return (
        Invitation.objects.filter(
            names, status=InvitationStatus.PENDING, created_at__gte=timezone.now() - max_age()
        )
        .select_related("organization")
        .order_by("-created_at")
    )


def _pending_for(invitation_id: Any, user: Any) -> Invitation:
    invitation = Invitation.objects.select_for_update().filter(pk=invitation_id).first()
    if (
        invitation is None
        or invitation.status != InvitationStatus.PENDING
        or invitation.created_at < timezone.now() - max_age()
        or not _matches(invitation, user)
    ):
        raise InvitationError(
            "This invitation is not open for your account (answered, withdrawn or expired)."
        )
    return invitation


def invitation_accept(*, invitation_id: Any, user: Any) -> Membership:
    """The holder of the invited account joins: membership, admin access, and this organization chosen."""
    from owlat.audit import audit_write

    with transaction.atomic():
        invitation = _pending_for(invitation_id, user)
        membership, _ = Membership.objects.get_or_create(
            user=user, organization_id=invitation.organization_id, defaults={"role": invitation.role}
        )
        Membership.objects.filter(pk=membership.pk).update(chosen_at=timezone.now())
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        INVITATIONS.transition_locked(
            invitation, InvitationStatus.ACCEPTED, actor=str(user.pk), input={"user_id": user.pk}
        )
        audit_write(
            organization_id=invitation.organization_id,
            actor=str(user.pk),
            action="member.joined",
            resource="membership",
            resource_id=str(membership.pk),
            details={"role": membership.role, "invitation": str(invitation.pk)},
        )
    return membership


def invitation_decline(*, invitation_id: Any, user: Any) -> None:
    with transaction.atomic():
        invitation = _pending_for(invitation_id, user)
        INVITATIONS.transition_locked(invitation, InvitationStatus.DECLINED, actor=str(user.pk))


def remember_waiting_invitations(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """`user_logged_in`: count the invitations waiting for the user once, at sign-in, for the admin header (no
    query per page). Refreshed when they answer one."""
    if request is not None and hasattr(request, "session"):
        request.session[SESSION_WAITING] = invitations_for(user).count()
