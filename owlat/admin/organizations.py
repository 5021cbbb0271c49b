"""Organizations and their members (DOM-02 roles); their settings are in `owlat.admin.organization_settings`."""

from __future__ import annotations

import re
import uuid
import zoneinfo
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import path, reverse

from owlat.admin_tenancy import (
    TenantModelAdmin,
    TenantTabularInline,
    get_tenancy,
    is_platform_staff,
    switch_organization_view,
)
from owlat.models import (
    Contact,
    Invitation,
    InvitationStatus,
    Membership,
    Organization,
    Role,
)

# --- organizations and members -----------------------------------------------------------------------------


class MembershipForm(forms.ModelForm):
    """A member's row: who (shown), and their role. People join by invitation (InvitationInline)."""

    member = forms.CharField(label="User", required=False, disabled=True)

    class Meta:
        model = Membership
        fields = ("member", "role")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:
            self.fields["member"].initial = self.instance.user.get_username()


class MembershipFormSet(forms.BaseInlineFormSet):
    request: HttpRequest | None = None

    def clean(self) -> None:
        super().clean()
        tenancy = get_tenancy(self.request) if self.request is not None else None
        acting_is_owner = tenancy is not None and (tenancy.is_platform_staff or tenancy.role == Role.OWNER)
        owners = 0
        for form in self.forms:
            if not hasattr(form, "cleaned_data") or not form.cleaned_data:
                if not form.instance._state.adding and form.instance.role == Role.OWNER:
                    owners += 1
                continue
            deleting = form.cleaned_data.get("DELETE", False)
            before = form.initial.get("role") if not form.instance._state.adding else None
            after = form.cleaned_data.get("role")
            touches_owner = Role.OWNER in (before, after) and (deleting or before != after)
            if touches_owner and not acting_is_owner:
                raise ValidationError("Only owners can grant or remove the owner role.")
            if not deleting and (after or before) == Role.OWNER:
                owners += 1
        had_owner = (
            not self.instance._state.adding and self.instance.memberships.filter(role=Role.OWNER).exists()
        )
        if had_owner and owners == 0:
            raise ValidationError("An organization keeps at least one owner.")


class MembershipInline(TenantTabularInline):
    hide_title = True  # rows show their fields, not a "Model object (uuid)" line
    model = Membership
    form = MembershipForm
    formset = MembershipFormSet
    manage_permission = "organization:manage"
    extra = 0
    fields = ("member", "role", "created_at")
    readonly_fields = ("created_at",)

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("user")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # people join by invitation: nothing about another account changes before they accept

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any):
        formset = super().get_formset(request, obj, **kwargs)
        formset.request = request
        return formset


class InvitationForm(forms.ModelForm):
    class Meta:
        model = Invitation
        fields = ("invitee", "role")
        labels = {"invitee": "Username or email"}
        help_texts = {"role": "What they may do once they accept (owner: everything, including deleting)."}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:
            self.fields["invitee"].disabled = True

    def clean_invitee(self) -> str:
        from owlat.invitations import normalize_invitee

        value = normalize_invitee(self.cleaned_data.get("invitee") or "")
        if not self.instance._state.adding:
            return self.instance.invitee
        if not value:
            raise ValidationError("Enter a username or an email address.")
        org_id = self.instance.organization_id
        if (
            org_id
            and Membership.objects.filter(
                Q(user__username=value) | Q(user__email__iexact=value), organization_id=org_id
            ).exists()
        ):
            raise ValidationError("Already a member of this organization (see Members).")
        return value


class InvitationFormSet(forms.BaseInlineFormSet):
    request: HttpRequest | None = None

    def clean(self) -> None:
        super().clean()
        tenancy = get_tenancy(self.request) if self.request is not None else None
        acting_is_owner = tenancy is not None and (tenancy.is_platform_staff or tenancy.role == Role.OWNER)
        for form in self.forms:
            data = getattr(form, "cleaned_data", None) or {}
            if data.get("role") == Role.OWNER and form.has_changed() and not acting_is_owner:
                form.add_error("role", "Only owners can invite owners.")


class InvitationInline(TenantTabularInline):
    """Open invitations. A new row invites the person it names; removing a row withdraws the invitation."""

    hide_title = True
    model = Invitation
    form = InvitationForm
    formset = InvitationFormSet
    manage_permission = "organization:manage"
    extra = 0
    fields = ("invitee", "role", "created_at")
    readonly_fields = ("created_at",)
    verbose_name = "invitation"
    verbose_name_plural = "Invitations (people join when they accept)"

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).filter(status=InvitationStatus.PENDING)

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any):
        formset = super().get_formset(request, obj, **kwargs)
        formset.request = request
        return formset


def _count_of(queryset: Any) -> Coalesce:
    counted = queryset.order_by().values("organization").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


@admin.register(Organization)
class OrganizationAdmin(TenantModelAdmin):
    tenant_lookup = "pk"
    manage_permission = "organization:manage"
    delete_permission = "organization:delete"
    list_display = ("name", "member_count", "contact_count", "created_at")
    search_fields = ("name",)
    fields = ("name", "postal_address")
    inlines = (MembershipInline, InvitationInline)

    def get_urls(self):
        return [
            path(
                "switch/",
                self.admin_site.admin_view(switch_organization_view),
                name="owlat_switch_organization",
            ),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest):
        return (
            super()
            .get_queryset(request)
            .annotate(
                # one correlated subquery per column for the listed organizations, not a join of members x
                # contacts grouped over every organization
                _members=_count_of(Membership.objects.filter(organization=OuterRef("pk"))),
                _contacts=_count_of(
                    Contact.objects.filter(organization=OuterRef("pk"), deleted_at__isnull=True)
                ),
            )
        )

    @admin.display(description="members", ordering="_members")
    def member_count(self, obj: Organization) -> int:
        return obj._members

    @admin.display(description="contacts", ordering="_contacts")
    def contact_count(self, obj: Organization) -> int:
        return obj._contacts

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return is_platform_staff(request.user)

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ):
        """Removing members or withdrawing invitations (their rows' Delete boxes) asks first, naming who loses
        what; the confirmation posts the same form again with `_confirm_removal`."""
        if request.method == "POST" and object_id and "_confirm_removal" not in request.POST:
            obj = self.get_object(request, object_id)
            if obj is not None and self.has_change_permission(request, obj):
                members, invitations = _removals(request, obj)
                if members or invitations:
                    return _removal_confirmation(self, request, obj, members, invitations)
        return super().changeform_view(request, object_id, form_url, extra_context)

    def get_deleted_objects(self, objs: Any, request: HttpRequest):
        # `organization:delete` covers every row of the organization (audit rows included).
        deleted, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), protected

    def save_model(self, request: HttpRequest, obj: Organization, form: Any, change: bool) -> None:
        from owlat.organizations import organization_settings

        super().save_model(request, obj, form, change)
        organization_settings(obj.pk)  # the settings row with the DOM-17 flag defaults

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is Membership:
            for member_form in formset.deleted_forms:
                member = member_form.instance
                if member._state.adding:
                    continue  # a row naming no member of this organization: nothing to remove
                _audit_removal(request, member, "member_removed", member.user.get_username())
        if formset.model is not Invitation:
            super().save_formset(request, form, formset, change)
            return
        from owlat.invitations import ANSWER, invitation_create

        formset.save(commit=False)
        for obj in formset.deleted_objects:
            _audit_removal(request, obj, "invitation_withdrawn", obj.invitee)
            obj.delete()  # withdrawn
        for invitation_form in formset.forms:
            data = getattr(invitation_form, "cleaned_data", None) or {}
            if not data or data.get("DELETE") or not invitation_form.has_changed():
                continue
            invitation = invitation_create(
                organization=form.instance,
                invitee=data.get("invitee") or invitation_form.instance.invitee,
                role=data["role"],
                invited_by=request.user,
            )
            # the same answer whether or not an account answers to that name
            messages.success(request, ANSWER.format(invitee=invitation.invitee))


_DELETE_KEY = re.compile(r"^(memberships|invitations)-(\d{1,4})-DELETE$")


def _removals(request: HttpRequest, org: Organization) -> tuple[list[Membership], list[Invitation]]:
    """The members and open invitations of `org` whose rows the posted form deletes (other ids: not ours)."""
    ids: dict[str, list[str]] = {"memberships": [], "invitations": []}
    for key, value in request.POST.items():
        match = _DELETE_KEY.match(key)
        if match and value and value.lower() not in ("off", "false", "0"):
            ids[match[1]].append(request.POST.get(f"{match[1]}-{match[2]}-id", ""))

    def valid(values: list[str]) -> list[uuid.UUID]:
        out = []
        for value in values:
            try:
                out.append(uuid.UUID(value))
            except ValueError:
                continue  # the formset names the broken row
        return out

    members = list(
        Membership.objects.filter(organization=org, pk__in=valid(ids["memberships"])).select_related("user")
    )
    invitations = list(
        Invitation.objects.filter(
            organization=org, pk__in=valid(ids["invitations"]), status=InvitationStatus.PENDING
        )
    )
    return members, invitations


def _removal_confirmation(
    model_admin: Any,
    request: HttpRequest,
    org: Organization,
    members: list[Membership],
    invitations: list[Invitation],
) -> TemplateResponse:
    fields = [(k, v) for k, values in request.POST.lists() for v in values if k != "csrfmiddlewaretoken"]
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Remove members?" if members else "Withdraw invitations?",
        "opts": Organization._meta,
        "original": org,
        "members": members,
        "invitations": invitations,
        "fields": fields,
        "back": reverse("admin:owlat_organization_change", args=[org.pk]),
    }
    return TemplateResponse(request, "admin/owlat/organization/confirm_removal.html", context)


def _audit_removal(request: HttpRequest, obj: Any, action: str, who: str) -> None:
    from owlat.audit import audit_write

    audit_write(
        organization_id=obj.organization_id,
        actor=str(request.user.pk),  # as every admin audit row (TenantModelAdmin.actor)
        action=action,
        resource="membership" if isinstance(obj, Membership) else "invitation",
        resource_id=str(obj.pk),
        details={"who": who, "role": obj.role},
    )


def is_timezone(name: str) -> bool:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True
