"""The admin base classes every tenant admin uses: filtering by the active organization, DOM-02 permissions."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.filters import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import flatten_fieldsets
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.http import HttpRequest
from unfold.admin import ModelAdmin as UnfoldModelAdmin
from unfold.admin import StackedInline as UnfoldStackedInline
from unfold.admin import TabularInline as UnfoldTabularInline

from owlat.admin_tenancy.access import Tenancy, get_tenancy, tenancy_flag_enabled
from owlat.admin_tenancy.filtering import (
    _object_org_id,
    cross_organization_errors,
    has_direct_organization,
    restrict_form_to_organization,
    tenant_filter,
    tenant_lookup_for,
)
from owlat.models import Organization

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
        if self.feature_flag and not tenancy_flag_enabled(request, self.feature_flag):
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


class TenantModelAdmin(TenantAdminMixin, UnfoldModelAdmin):
    """Base ModelAdmin for every tenant model (D-12). Subclass and set `manage_permission`.

    Built on django-unfold's `ModelAdmin`, so every app's screens get the theme (widgets, sidebar, tabs).
    """

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


class TenantTabularInline(TenantInlineMixin, UnfoldTabularInline):
    pass


class TenantStackedInline(TenantInlineMixin, UnfoldStackedInline):
    pass


class PlatformOnlyAdmin(TenantModelAdmin):
    """Screens only platform staff see (background-work rows, install-wide tables)."""

    platform_only = True
