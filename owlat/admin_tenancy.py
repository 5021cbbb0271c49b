"""Admin tenancy (D-12): the active-organization switch and the base classes every tenant admin uses.

The Django admin is the product UI for organization members as well as the console of platform staff.

* `ActiveOrganizationMiddleware` resolves, per request, which organization the admin shows:
  `request.tenancy` (a `Tenancy`) and `request.active_organization` (an `Organization` or `None`).
  A member picks one of their own organizations; platform staff (superusers) may pick any organization or
  "all". The choice lives in the session (`SESSION_KEY`).
* `switch_organization_view` (mounted by `owlat.admin` at `admin:owlat_switch_organization`) changes it;
  the header selector (template `admin/base_site.html`) posts to it.
* `TenantModelAdmin` / `TenantAdminMixin` and `TenantTabularInline` / `TenantStackedInline` filter everything a
  member sees, picks or counts by the active organization (querysets, foreign-key and many-to-many choices,
  list filters, actions, search, counts, change views by URL), fill in `organization` on create, reject
  references across organizations, and map DOM-02 roles to the admin's view/add/change/delete permissions.

Other apps' admins subclass `TenantModelAdmin` and set `manage_permission` (e.g. "campaigns:manage").
Organization members are staff users without Django model permissions: these classes decide.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.filters import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import flatten_fieldsets
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db import models
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import NoReverseMatch, reverse
from django.utils.http import url_has_allowed_host_and_scheme

from owlat.models import Membership, Organization

SESSION_KEY = "owlat_active_organization"
ALL_ORGANIZATIONS = "all"
SWITCH_URL_NAME = "admin:owlat_switch_organization"

# Models whose organization is reached through a relation rather than an `organization` field.
_TENANT_LOOKUPS: dict[type[models.Model], str] = {}


def register_tenant_lookup(model: type[models.Model], lookup: str) -> None:
    """Declare how `model` reaches its organization, e.g. `register_tenant_lookup(Attempt, "delivery__organization")`.

    Models with a direct `organization` foreign key need no registration.
    """
    _TENANT_LOOKUPS[model] = lookup


def tenant_lookup_for(model: type[models.Model]) -> str | None:
    """The ORM lookup from `model` to its Organization: "pk" for Organization itself, None if not a tenant model."""
    if model is Organization or (model._meta.concrete_model is Organization):
        return "pk"
    if model in _TENANT_LOOKUPS:
        return _TENANT_LOOKUPS[model]
    try:
        f = model._meta.get_field("organization")
    except FieldDoesNotExist:
        return None
    if f.is_relation and f.related_model is Organization:
        return "organization"
    return None


def has_direct_organization(model: type[models.Model]) -> bool:
    return tenant_lookup_for(model) == "organization"


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
        org_id = _parse_uuid(chosen) if chosen and chosen != ALL_ORGANIZATIONS else None
        org = Organization.objects.filter(pk=org_id).first() if org_id else None
        choices = tuple((str(o.pk), o.name) for o in Organization.objects.order_by("name").only("id", "name"))
        if org is None:
            return Tenancy(is_platform_staff=True, all_organizations=True, choices=choices)
        role = next((m.role for m in memberships if m.organization_id == org.pk), None)
        return Tenancy(organization=org, role=role, is_platform_staff=True, choices=choices)
    if not memberships:
        return NO_TENANCY
    active = next((m for m in memberships if str(m.organization_id) == str(chosen)), memberships[0])
    if session is not None and chosen != str(active.organization_id):
        session[SESSION_KEY] = str(active.organization_id)
    choices = tuple((str(m.organization_id), m.organization.name) for m in memberships)
    return Tenancy(organization=active.organization, role=active.role, choices=choices)


def get_tenancy(request: HttpRequest) -> Tenancy:
    """The request's tenancy (resolved once and cached on the request)."""
    tenancy = getattr(request, "tenancy", None)
    if tenancy is None:
        user = getattr(request, "user", None)
        tenancy = resolve_tenancy(user, getattr(request, "session", None))
        request.tenancy = tenancy
        request.active_organization = tenancy.organization
    return tenancy


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
    tenancy = getattr(request, "tenancy", None)
    if tenancy is None or (not tenancy.choices and not tenancy.is_platform_staff):
        return {}
    try:
        switch_url = reverse(SWITCH_URL_NAME)
    except NoReverseMatch:
        return {}
    return {
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


# --- filtering ----------------------------------------------------------------------------------------------


def tenant_filter(request: HttpRequest, qs: models.QuerySet, lookup: str | None = None) -> models.QuerySet:
    """Filter `qs` to the active organization of `request` (everything for platform staff in "all" mode).

    Models that are not tenant rows pass unchanged, except users, which members see only within the active
    organization.
    """
    tenancy = get_tenancy(request)
    model = qs.model
    lookup = lookup or tenant_lookup_for(model)
    if lookup is None:
        if issubclass(model, get_user_model()) and not tenancy.sees_everything:
            if tenancy.is_platform_staff and tenancy.organization is None:
                return qs
            if tenancy.organization is None:
                return qs.none()
            return qs.filter(memberships__organization_id=tenancy.organization_id).distinct()
        return qs
    if tenancy.sees_everything:
        return qs
    if tenancy.organization is None:
        return qs.none()
    return qs.filter(**{lookup: tenancy.organization_id})


def _filter_by_org_id(qs: models.QuerySet, org_id: Any) -> models.QuerySet:
    lookup = tenant_lookup_for(qs.model)
    if lookup is None or org_id is None:
        return qs
    return qs.filter(**{lookup: org_id})


def _object_org_id(obj: Any) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Organization):
        return obj.pk
    if hasattr(obj, "organization_id"):
        return obj.organization_id
    lookup = tenant_lookup_for(type(obj))
    if lookup is None:
        return None
    target: Any = obj
    for part in lookup.split("__"):
        if part == "organization":
            return getattr(target, "organization_id", None)
        target = getattr(target, part, None)
        if target is None:
            return None
    return getattr(target, "pk", None)


def restrict_form_to_organization(form: forms.BaseForm, org_id: Any) -> None:
    """Limit every model-choice field of `form` to rows of organization `org_id`."""
    if org_id is None:
        return
    for f in form.fields.values():
        if isinstance(f, forms.ModelChoiceField) and f.queryset is not None:
            f.queryset = _filter_by_org_id(f.queryset, org_id)


def cross_organization_errors(cleaned_data: dict[str, Any], org_id: Any) -> dict[str, str]:
    """DOM-01: references across organizations are rejected. Returns {field: message}."""
    errors: dict[str, str] = {}
    if org_id is None:
        return errors
    for name, value in cleaned_data.items():
        if name == "organization":
            continue
        values = (
            list(value)
            if isinstance(value, models.QuerySet | list | tuple) and not isinstance(value, str)
            else [value]
        )
        for item in values:
            if isinstance(item, models.Model) and not isinstance(item, Organization):
                item_org = _object_org_id(item)
                if item_org is not None and str(item_org) != str(org_id):
                    errors[name] = "Select an item of the same organization."
                    break
    return errors


# --- the admin base classes ---------------------------------------------------------------------------------


class TenantAdminMixin:
    """Tenant filtering and DOM-02 permissions for a ModelAdmin or an inline (D-12).

    Class attributes:
      tenant_lookup      ORM path to the organization (default: derived, "organization" or "pk")
      view_permission    DOM-02 permission to view (None = every member of the active organization)
      manage_permission  DOM-02 permission to add/change (None = platform staff only)
      delete_permission  DOM-02 permission to delete (default: manage_permission)
      read_only          nobody adds, changes or deletes (logs)
      platform_only      only platform staff see this screen
      feature_flag       DOM-17 flag that must be on for members to see this screen
    """

    tenant_lookup: str | None = None
    view_permission: str | None = None
    manage_permission: str | None = None
    delete_permission: str | None = None
    read_only: bool = False
    platform_only: bool = False
    feature_flag: str | None = None
    cross_organization_message = "Select an item of the same organization."

    # -- tenancy helpers
    def tenancy(self, request: HttpRequest) -> Tenancy:
        return get_tenancy(request)

    def get_tenant_lookup(self) -> str | None:
        return self.tenant_lookup or tenant_lookup_for(self.model)

    def active_organization(self, request: HttpRequest) -> Organization | None:
        return get_tenancy(request).organization

    def actor(self, request: HttpRequest) -> str:
        """The actor string for services and audit rows: the user id."""
        return str(request.user.pk)

    # -- permissions (DOM-02 → admin)
    def _visible(self, request: HttpRequest) -> bool:
        tenancy = get_tenancy(request)
        if tenancy.is_platform_staff:
            return True
        if self.platform_only or tenancy.organization is None:
            return False
        if self.feature_flag:
            from owlat.flags import flag_enabled

            if not flag_enabled(tenancy.organization_id, self.feature_flag):
                return False
        return tenancy.allows(self.view_permission)

    def _owns(self, request: HttpRequest, obj: Any) -> bool:
        if obj is None:
            return True
        tenancy = get_tenancy(request)
        if tenancy.sees_everything:
            return True
        org_id = _object_org_id(obj)
        return org_id is None or tenancy.organization is None or str(org_id) == str(tenancy.organization_id)

    def _may(self, request: HttpRequest, perm: str | None, obj: Any = None) -> bool:
        if self.read_only or not self._visible(request) or not self._owns(request, obj):
            return False
        tenancy = get_tenancy(request)
        if tenancy.is_platform_staff:
            return True
        return perm is not None and tenancy.allows(perm)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._visible(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._visible(request) and self._owns(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        # ModelAdmin: (request); InlineModelAdmin: (request, parent_obj)
        return self._may(request, self.manage_permission, args[0] if args else None)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may(request, self.manage_permission, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may(request, self.delete_permission or self.manage_permission, obj)

    # -- what is shown
    def get_queryset(self, request: HttpRequest):
        qs = super().get_queryset(request)
        if not self._visible(request):
            return qs.none()
        return tenant_filter(request, qs, self.get_tenant_lookup())

    def get_field_queryset(self, db, db_field, request: HttpRequest):
        qs = super().get_field_queryset(db, db_field, request)
        if qs is None:
            qs = db_field.remote_field.model._default_manager.using(db).all()
        return tenant_filter(request, qs)

    def get_list_filter(self, request: HttpRequest):
        result = []
        sees_everything = get_tenancy(request).sees_everything
        for item in super().get_list_filter(request):
            if isinstance(item, str):
                if item == "organization" or item.endswith("__organization"):
                    if sees_everything:
                        result.append(item)
                    continue
                if self._is_relation_path(item):
                    # Choices come from this (tenant-filtered) queryset, never from the whole table.
                    result.append((item, RelatedOnlyFieldListFilter))
                    continue
            result.append(item)
        return result

    def _is_relation_path(self, path: str) -> bool:
        model = self.model
        f = None
        for part in path.split("__"):
            try:
                f = model._meta.get_field(part)
            except FieldDoesNotExist:
                return False
            if f.is_relation and f.related_model is not None:
                model = f.related_model
        return bool(f is not None and f.is_relation)

    def get_list_select_related(self, request: HttpRequest):
        related = super().get_list_select_related(request)
        if not (get_tenancy(request).sees_everything and has_direct_organization(self.model)):
            return related
        if related is True or related is False:
            return related  # False: Django selects the foreign keys shown in list_display itself
        return (*related, "organization") if "organization" not in related else related

    def get_list_display(self, request: HttpRequest):
        display = list(super().get_list_display(request))
        if (
            get_tenancy(request).sees_everything
            and has_direct_organization(self.model)
            and "organization" not in display
        ):
            display.append("organization")
        return display


class TenantModelAdmin(TenantAdminMixin, admin.ModelAdmin):
    """Base ModelAdmin for every tenant model (D-12). Subclass and set `manage_permission`."""

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(super().get_fields(request, obj))
        if has_direct_organization(self.model) and "organization" not in fields:
            fields.insert(0, "organization")
        return fields

    def get_fieldsets(self, request: HttpRequest, obj: Any = None):
        fieldsets = super().get_fieldsets(request, obj)
        if has_direct_organization(self.model) and "organization" not in flatten_fieldsets(fieldsets):
            fieldsets = [(name, dict(opts)) for name, opts in fieldsets]
            if fieldsets:
                _name, opts = fieldsets[0]
                opts["fields"] = ["organization", *opts.get("fields", ())]
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(super().get_readonly_fields(request, obj))
        # `organization` is a disabled form field (so per-organization constraints validate); never read-only.
        return [f for f in fields if f != "organization"]

    def form_organization(self, request: HttpRequest, obj: Any = None) -> Organization | None:
        """The organization a form writes to: the object's, else the active one (None: choose, platform staff)."""
        if obj is not None and has_direct_organization(self.model):
            return obj.organization
        return get_tenancy(request).organization

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        form_class = super().get_form(request, obj, change=change, **kwargs)
        if not has_direct_organization(self.model):
            return form_class
        fixed = self.form_organization(request, obj)
        message = self.cross_organization_message

        class TenantForm(form_class):
            def __init__(self, *args: Any, **kw: Any) -> None:
                super().__init__(*args, **kw)
                org_field = self.fields.get("organization")
                if fixed is not None:
                    if org_field is not None:
                        org_field.queryset = Organization.objects.filter(pk=fixed.pk)
                        org_field.initial = fixed.pk
                        org_field.disabled = True
                        org_field.required = True
                    if self.instance.organization_id is None:
                        self.instance.organization = fixed
                    restrict_form_to_organization(self, fixed.pk)
                elif org_field is not None:
                    org_field.required = True

            def clean(self) -> dict[str, Any]:
                cleaned = super().clean()
                org = cleaned.get("organization") or fixed
                org_id = org.pk if org is not None else None
                for name, _ in cross_organization_errors(cleaned, org_id).items():
                    if name in self.fields:
                        self.add_error(name, message)
                return cleaned

        TenantForm.__name__ = form_class.__name__
        return TenantForm

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if has_direct_organization(self.model) and obj.organization_id is None:
            org = get_tenancy(request).organization
            if org is None:
                raise PermissionDenied("Choose an organization first.")
            obj.organization = org
        super().save_model(request, obj, form, change)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        parent_org_id = _object_org_id(form.instance)
        for inline_form in formset.forms:
            instance = inline_form.instance
            if (
                has_direct_organization(type(instance))
                and instance.organization_id is None
                and parent_org_id is not None
            ):
                instance.organization_id = parent_org_id
        super().save_formset(request, form, formset, change)


class _TenantInlineFormSetMixin:
    """Inline formsets: rows get the parent's organization; choices are the parent's organization's rows."""

    def _construct_form(self, i: int, **kwargs: Any):
        form = super()._construct_form(i, **kwargs)
        org_id = _object_org_id(self.instance)
        if org_id is not None:
            if (
                has_direct_organization(type(form.instance))
                and getattr(self, "fk", None) is not None
                and self.fk.name != "organization"
                and form.instance.organization_id is None
            ):
                form.instance.organization_id = org_id
            restrict_form_to_organization(form, org_id)
        return form

    @property
    def empty_form(self):
        form = super().empty_form
        restrict_form_to_organization(form, _object_org_id(self.instance))
        return form

    def clean(self) -> None:
        super().clean()
        org_id = _object_org_id(self.instance)
        for form in self.forms:
            if not hasattr(form, "cleaned_data"):
                continue
            for name in cross_organization_errors(form.cleaned_data, org_id):
                if name in form.fields:
                    form.add_error(name, TenantAdminMixin.cross_organization_message)


class TenantInlineMixin(TenantAdminMixin):
    """Inline version: `has_*_permission(request, obj)` receive the parent object."""

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any):
        formset_class = super().get_formset(request, obj, **kwargs)
        return type(formset_class.__name__, (_TenantInlineFormSetMixin, formset_class), {})

    def _hides_organization(self) -> bool:
        # Rows of an inline under a non-Organization parent take the parent's organization.
        return has_direct_organization(self.model) and self.parent_model is not Organization

    def get_exclude(self, request: HttpRequest, obj: Any = None):
        exclude = list(super().get_exclude(request, obj) or [])
        if self._hides_organization() and "organization" not in exclude:
            exclude.append("organization")
        return exclude

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(super().get_fields(request, obj))
        if self._hides_organization():
            fields = [f for f in fields if f != "organization"]
        return fields


class TenantTabularInline(TenantInlineMixin, admin.TabularInline):
    pass


class TenantStackedInline(TenantInlineMixin, admin.StackedInline):
    pass


class PlatformOnlyAdmin(TenantModelAdmin):
    """Screens only platform staff see (background-work rows, install-wide tables)."""

    platform_only = True
