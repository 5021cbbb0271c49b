"""Who is asking: the active-organization switch (D-12), its middleware, context processor and view."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

from owlat.models import Membership, Organization

SESSION_KEY = "owlat_active_organization"
ALL_ORGANIZATIONS = "all"
SWITCH_URL_NAME = "admin:owlat_switch_organization"

# --- who is asking ------------------------------------------------------------------------------------------


def is_platform_staff(user: Any) -> bool:
    """Platform staff = operators of the installation (superusers), distinct from organization roles (DOM-02)."""
    return bool(
        user is not None and getattr(user, "is_authenticated", False) and user.is_active and user.is_superuser
    )


@dataclass(frozen=True)
class Tenancy:
    """What the admin shows to this request.

    `organization` is the active organization (None when nothing is active, or platform staff chose "all").
    `role` is the member's DOM-02 role in it (None for platform staff without a membership).
    """

    organization: Organization | None = None
    role: str | None = None
    is_platform_staff: bool = False
    all_organizations: bool = False
    choices: tuple[tuple[str, str], ...] = field(default=())

    @property
    def organization_id(self) -> Any:
        return self.organization.pk if self.organization is not None else None

    @property
    def sees_everything(self) -> bool:
        return self.is_platform_staff and self.all_organizations

    def allows(self, perm: str | None) -> bool:
        """DOM-02: may this request do `perm` in the active organization? (None = any member / platform staff)."""
        if self.is_platform_staff:
            return True
        if self.organization is None or self.role is None:
            return False
        if perm is None:
            return True
        from owlat.permissions import has_permission

        return bool(has_permission(self.role, perm))


NO_TENANCY = Tenancy()


def _parse_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def resolve_tenancy(user: Any, session: Any) -> Tenancy:
    """Resolve the active organization for `user` from the session choice (and repair a stale choice)."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return NO_TENANCY
    chosen = session.get(SESSION_KEY) if session is not None else None
    memberships = list(
        Membership.objects.filter(user=user).select_related("organization").order_by("organization__name")
    )
    if is_platform_staff(user):
        choices = tuple((str(o.pk), o.name) for o in Organization.objects.order_by("name").only("id", "name"))
        if not chosen:
            # No choice yet: start at the member's own organization, or the only one; else "all".
            if memberships:
                chosen = str(last_chosen(memberships).organization_id)
            elif len(choices) == 1:
                chosen = choices[0][0]
            if chosen and session is not None:
                session[SESSION_KEY] = chosen
        org_id = _parse_uuid(chosen) if chosen and chosen != ALL_ORGANIZATIONS else None
        org = Organization.objects.filter(pk=org_id).first() if org_id else None
        if org is None:
            return Tenancy(is_platform_staff=True, all_organizations=True, choices=choices)
        role = next((m.role for m in memberships if m.organization_id == org.pk), None)
        return Tenancy(organization=org, role=role, is_platform_staff=True, choices=choices)
    if not memberships:
        return NO_TENANCY
    active = next((m for m in memberships if str(m.organization_id) == str(chosen)), None) or last_chosen(
        memberships
    )
    if session is not None and chosen != str(active.organization_id):
        session[SESSION_KEY] = str(active.organization_id)
    choices = tuple((str(m.organization_id), m.organization.name) for m in memberships)
    return Tenancy(organization=active.organization, role=active.role, choices=choices)


def last_chosen(memberships: list[Membership]) -> Membership:
    """Where a member lands without a choice in their session (after signing in): the organization they chose
    last (switch, accepted invitation), else the one they joined first. Every membership was accepted."""
    never = dt.datetime.min.replace(tzinfo=dt.UTC)
    return max(memberships, key=lambda m: (m.chosen_at or never, -m.created_at.timestamp()))


def get_tenancy(request: HttpRequest) -> Tenancy:
    """The request's tenancy (resolved once and cached on the request)."""
    tenancy = getattr(request, "tenancy", None)
    if tenancy is None:
        user = getattr(request, "user", None)
        tenancy = resolve_tenancy(user, getattr(request, "session", None))
        request.tenancy = tenancy
        request.active_organization = tenancy.organization
    return tenancy


def tenancy_flag_enabled(request: HttpRequest, flag: str) -> bool:
    """DOM-17: is `flag` on for the active organization? Read once per request (a page asks for every screen)."""
    tenancy = get_tenancy(request)
    if tenancy.organization is None:
        return False
    cached = getattr(request, "_owlat_flags", None)
    if cached is None or cached[0] != tenancy.organization_id:
        from owlat.flags import resolve_flags
        from owlat.models import OrganizationSettings

        stored = (
            OrganizationSettings.objects.filter(organization_id=tenancy.organization_id)
            .values_list("feature_flags", flat=True)
            .first()
        )
        cached = (tenancy.organization_id, resolve_flags(stored, tenancy.organization_id))
        request._owlat_flags = cached
    return bool(cached[1][flag])


def tenancy_switch(request: HttpRequest, value: str) -> bool:
    """Make `value` (an organization id, or "all" for platform staff) the active choice. False if not allowed."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    staff = is_platform_staff(user)
    if value == ALL_ORGANIZATIONS:
        if not staff:
            return False
    else:
        org_id = _parse_uuid(value)
        if org_id is None:
            return False
        if staff:
            if not Organization.objects.filter(pk=org_id).exists():
                return False
        elif not Membership.objects.filter(user=user, organization_id=org_id).exists():
            return False
        value = str(org_id)
    request.session[SESSION_KEY] = value
    if value != ALL_ORGANIZATIONS:
        Membership.objects.filter(user=user, organization_id=value).update(chosen_at=timezone.now())
    for attr in ("tenancy", "active_organization"):
        if hasattr(request, attr):
            delattr(request, attr)
    get_tenancy(request)
    return True


class ActiveOrganizationMiddleware:
    """Sets `request.tenancy` and `request.active_organization` for signed-in staff users (the admin's users).

    Other requests (the public API, public pages) get `NO_TENANCY` without touching the database.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user.is_staff:
            get_tenancy(request)
        else:
            request.tenancy = NO_TENANCY
            request.active_organization = None
        return self.get_response(request)


def active_organization_context(request: HttpRequest) -> dict[str, Any]:
    """Template context for the admin header's organization selector."""
    from owlat.invitations import SESSION_WAITING

    session = getattr(request, "session", None)
    waiting = (
        session.get(SESSION_WAITING) if session is not None and request.path.startswith("/admin/") else 0
    )
    extra = {"owlat_pending_invitations": waiting} if waiting else {}
    tenancy = getattr(request, "tenancy", None)
    if tenancy is None or (not tenancy.choices and not tenancy.is_platform_staff):
        return extra
    try:
        switch_url = reverse(SWITCH_URL_NAME)
    except NoReverseMatch:
        return extra
    return {
        **extra,
        "owlat_tenancy": tenancy,
        "owlat_active_organization": tenancy.organization,
        "owlat_active_organization_id": str(tenancy.organization_id) if tenancy.organization else "",
        "owlat_organization_choices": tenancy.choices,
        "owlat_can_pick_all": tenancy.is_platform_staff,
        "owlat_all_organizations": tenancy.all_organizations,
        "owlat_switch_url": switch_url,
        "owlat_all_value": ALL_ORGANIZATIONS,
    }


def switch_organization_view(request: HttpRequest):
    """POST `organization` (an id, or "all" for platform staff) and optional `next`; redirects back."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    value = request.POST.get("organization", "")
    if not tenancy_switch(request, value):
        messages.error(request, "You cannot switch to that organization.")
    else:
        tenancy = get_tenancy(request)
        name = tenancy.organization.name if tenancy.organization else "all organizations"
        messages.success(request, f"Active organization: {name}.")
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = ""
    # After a switch the object being shown may belong to another organization: go to its changelist.
    return HttpResponseRedirect(_strip_object_path(target) if target else reverse("admin:index"))


def _strip_object_path(path: str) -> str:
    """`/admin/app/model/<id>/change/` → `/admin/app/model/` (objects do not survive an organization switch)."""
    try:
        index = reverse("admin:index")
    except NoReverseMatch:
        return path
    if not path.startswith(index):
        return path
    parts = [p for p in path[len(index) :].split("?")[0].split("/") if p]
    if len(parts) > 2:
        return f"{index}{parts[0]}/{parts[1]}/"
    return path
