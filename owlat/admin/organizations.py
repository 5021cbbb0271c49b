"""Organizations, their members (DOM-02 roles) and organization settings (feature flags, abuse status)."""

from __future__ import annotations

import re
import uuid
import zoneinfo
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

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
    OrganizationSettings,
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


# --- organization settings ---------------------------------------------------------------------------------


ABUSE_FIELDS = ("abuse_status", "abuse_status_reason")


def organization_abuse_status_change(
    *, settings_row: OrganizationSettings, status: str, reason: str, actor: str
) -> bool:
    """DOM-14: platform staff set the abuse status; audit `abuse_status_changed`. Returns whether it changed."""
    from owlat.audit import audit_write

    with transaction.atomic():
        row = OrganizationSettings.objects.select_for_update().get(pk=settings_row.pk)
        if row.abuse_status == status and row.abuse_status_reason == reason:
            return False
        previous = row.abuse_status
        row.abuse_status = status
        row.abuse_status_reason = reason
        row.abuse_status_changed_at = timezone.now()
        row.abuse_status_changed_by = actor
        row.save(
            update_fields=[
                "abuse_status",
                "abuse_status_reason",
                "abuse_status_changed_at",
                "abuse_status_changed_by",
                "updated_at",
            ]
        )
        audit_write(
            organization_id=row.organization_id,
            actor=actor,
            action="abuse_status_changed",
            resource="organization",
            resource_id=str(row.organization_id),
            details={"from": previous, "to": status, "reason": reason},
        )
    return True


class OrganizationSettingsForm(forms.ModelForm):
    class Meta:
        model = OrganizationSettings
        fields = (
            "organization",
            "timezone",
            "default_from_email",
            "default_from_name",
            "is_custom_campaign_senders_allowed",
            "abuse_status",
            "abuse_status_reason",
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from owlat.flags import FLAGS

        super().__init__(*args, **kwargs)
        stored = self.instance.feature_flags or {}
        for name, flag in FLAGS.items():
            label = f"Feature: {name}"
            if flag.requires:
                label += f" (requires {', '.join(flag.requires)})"
            self.fields[f"flag:{name}"] = forms.BooleanField(
                label=label, required=False, initial=bool(stored.get(name, flag.default))
            )

    def clean(self) -> dict[str, Any]:
        from owlat.flags import FLAGS, flag_change_refusals

        data = super().clean()
        wanted = {name: bool(data.get(f"flag:{name}")) for name in FLAGS if f"flag:{name}" in self.fields}
        refusals = flag_change_refusals(self.instance.feature_flags, wanted, self.instance.organization_id)
        for name, message in refusals.items():  # AGT-30: refused, not merely warned about
            self.add_error(f"flag:{name}", message)
        return data

    def clean_timezone(self) -> str:
        value = (self.cleaned_data.get("timezone") or "").strip()
        if value and not is_timezone(value):
            raise ValidationError("Enter an IANA time zone name such as Europe/Berlin.")
        return value

    def save(self, commit: bool = True) -> OrganizationSettings:
        from owlat.flags import FLAGS

        self.instance.feature_flags = {
            name: bool(self.cleaned_data.get(f"flag:{name}"))
            for name in FLAGS
            if f"flag:{name}" in self.fields
        }
        return super().save(commit)


def is_timezone(name: str) -> bool:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


@admin.register(OrganizationSettings)
class OrganizationSettingsAdmin(TenantModelAdmin):
    form = OrganizationSettingsForm
    manage_permission = "settings:manage"
    list_display = ("__str__", "abuse_status", "default_from_email", "daily_send_count")
    list_filter = ("abuse_status",)
    base_readonly = (
        "abuse_status_changed_at",
        "abuse_status_changed_by",
        "daily_send_count",
        "daily_send_count_reset_at",
        "effective_flags",
    )

    def get_fields(self, request: HttpRequest, obj: Any = None):
        from owlat.flags import FLAGS

        return [
            "organization",
            "timezone",
            "default_from_email",
            "default_from_name",
            "is_custom_campaign_senders_allowed",
            *[f"flag:{name}" for name in FLAGS],
            "effective_flags",
            *ABUSE_FIELDS,
            "abuse_status_changed_at",
            "abuse_status_changed_by",
            "daily_send_count",
            "daily_send_count_reset_at",
        ]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        # The flag checkboxes are form fields, not model fields: build the form from the model fields only.
        kwargs["fields"] = [
            f for f in self.get_fields(request, obj) if not f.startswith("flag:") and f != "effective_flags"
        ]
        kwargs["fields"] = [f for f in kwargs["fields"] if f not in self.get_readonly_fields(request, obj)]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(self.base_readonly)
        if not is_platform_staff(request.user):
            fields += list(ABUSE_FIELDS)  # DOM-14: only platform staff change the abuse status
        return fields

    @admin.display(description="effective feature flags")
    def effective_flags(self, obj: OrganizationSettings) -> str:
        from owlat.flags import ai_needs_configuration, resolve_flags

        if obj is None or obj._state.adding:
            return "-"
        flags = resolve_flags(obj.feature_flags, obj.organization_id)
        text = ", ".join(f"{name}: {'on' if on else 'off'}" for name, on in flags.items())
        if ai_needs_configuration(obj.organization_id):  # AGT-30
            text += " — ai needs configuration: set a model provider (environment or Inbox → Model providers)"
        return text

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # created with the organization (organization_create)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: OrganizationSettings, form: Any, change: bool) -> None:
        abuse_changed = any(f in form.changed_data for f in ABUSE_FIELDS)
        if abuse_changed:
            if not is_platform_staff(request.user):
                raise ValidationError("Only platform staff change the abuse status.")
            stored = OrganizationSettings.objects.get(pk=obj.pk)
            new_status, new_reason = obj.abuse_status, obj.abuse_status_reason
            # Save everything else first, then let the abuse writer change and audit the status.
            obj.abuse_status, obj.abuse_status_reason = stored.abuse_status, stored.abuse_status_reason
            super().save_model(request, obj, form, change)
            organization_abuse_status_change(
                settings_row=obj, status=new_status, reason=new_reason, actor=self.actor(request)
            )
            obj.refresh_from_db()
            return
        super().save_model(request, obj, form, change)
