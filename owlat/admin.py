"""The kernel's admin back-office (D-12): the members' product UI and the platform staff's console.

Every screen is a `TenantModelAdmin` (owlat.admin_tenancy): filtered by the active organization, DOM-02 roles
mapped to permissions. Writes go through the kernel services (contacts, topics, suppression, API keys) so their
triggers, activities and audit rows fire; status fields are read-only (DOM-20).
"""

from __future__ import annotations

import secrets
import zoneinfo
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.http import HttpRequest
from django.urls import path
from django.utils import timezone
from django.utils.html import format_html

from owlat.admin_tenancy import (
    PlatformOnlyAdmin,
    TenantModelAdmin,
    TenantTabularInline,
    get_tenancy,
    is_platform_staff,
    register_tenant_lookup,
    switch_organization_view,
)
from owlat.models import (
    ApiKey,
    AuditLog,
    BlockedEmail,
    BlockReason,
    CampaignSender,
    Contact,
    ContactActivity,
    ContactProperty,
    ContactPropertyValue,
    ContactSource,
    ContactTopic,
    Domain,
    DueTask,
    Event,
    Membership,
    Organization,
    OrganizationSettings,
    Role,
    Segment,
    SendingStat,
    Topic,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WorkerHeartbeat,
)

register_tenant_lookup(WebhookAttempt, "delivery__organization")

admin.site.site_header = "Owlat"
admin.site.site_title = "Owlat"
admin.site.index_title = "Back-office"


def _adopt(target: Any, source: Any) -> None:
    """Make the admin's in-memory `target` the row a service wrote (`source`), so the admin's redirects,
    messages and log entries refer to it. Writes `__dict__` directly: FSM fields are protected."""
    for f in type(source)._meta.concrete_fields:
        target.__dict__[f.attname] = getattr(source, f.attname)
    target._state.adding = False
    target._state.db = source._state.db


def _no_formset_changes(formset: Any) -> None:
    # The formset's rows were written by services; the admin's change message reads these.
    formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []


# --- organizations and members -----------------------------------------------------------------------------


class MembershipForm(forms.ModelForm):
    member = forms.CharField(
        label="User",
        required=False,
        help_text="Username or email of an existing account (new rows only).",
    )

    class Meta:
        model = Membership
        fields = ("member", "role")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["member"].disabled = True
            self.fields["member"].initial = self.instance.user.get_username()

    def clean_member(self) -> Any:
        if self.instance.pk:
            return self.instance.user
        value = (self.cleaned_data.get("member") or "").strip()
        if not value:
            if self.has_changed():
                raise ValidationError("Enter a username or email.")
            return None
        from django.contrib.auth import get_user_model

        users = get_user_model().objects.filter(Q(username=value) | Q(email__iexact=value))
        found = list(users[:2])
        if len(found) != 1:
            raise ValidationError(
                "No single account has this username or email. Platform staff create accounts."
            )
        user = found[0]
        if (
            self.instance.organization_id
            and Membership.objects.filter(user=user, organization_id=self.instance.organization_id).exists()
        ):
            raise ValidationError("This user is already a member.")
        self.instance.user = user
        return user


class MembershipFormSet(forms.BaseInlineFormSet):
    request: HttpRequest | None = None

    def clean(self) -> None:
        super().clean()
        tenancy = get_tenancy(self.request) if self.request is not None else None
        acting_is_owner = tenancy is not None and (tenancy.is_platform_staff or tenancy.role == Role.OWNER)
        owners = 0
        for form in self.forms:
            if not hasattr(form, "cleaned_data") or not form.cleaned_data:
                if form.instance.pk and form.instance.role == Role.OWNER:
                    owners += 1
                continue
            deleting = form.cleaned_data.get("DELETE", False)
            before = form.initial.get("role") if form.instance.pk else None
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
    model = Membership
    form = MembershipForm
    formset = MembershipFormSet
    manage_permission = "organization:manage"
    extra = 0
    fields = ("member", "role", "created_at")
    readonly_fields = ("created_at",)

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("user")

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any):
        formset = super().get_formset(request, obj, **kwargs)
        formset.request = request
        return formset


@admin.register(Organization)
class OrganizationAdmin(TenantModelAdmin):
    tenant_lookup = "pk"
    manage_permission = "organization:manage"
    delete_permission = "organization:delete"
    list_display = ("name", "member_count", "contact_count", "created_at")
    search_fields = ("name",)
    fields = ("name", "postal_address")
    inlines = (MembershipInline,)

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
                _members=Count("memberships", distinct=True),
                _contacts=Count("contacts", filter=Q(contacts__deleted_at__isnull=True), distinct=True),
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

    def get_deleted_objects(self, objs: Any, request: HttpRequest):
        # `organization:delete` covers every row of the organization (audit rows included).
        deleted, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), protected

    def save_model(self, request: HttpRequest, obj: Organization, form: Any, change: bool) -> None:
        from owlat.organizations import organization_settings

        super().save_model(request, obj, form, change)
        organization_settings(obj.pk)  # the settings row with the DOM-17 flag defaults

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        if formset.model is Membership:
            # Members use the admin as their product UI (D-12): they need staff access, no model permissions.
            for membership in formset.new_objects:
                if not membership.user.is_staff:
                    membership.user.is_staff = True
                    membership.user.save(update_fields=["is_staff"])


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

    def clean_timezone(self) -> str:
        value = (self.cleaned_data.get("timezone") or "").strip()
        if value and not _is_timezone(value):
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


def _is_timezone(name: str) -> bool:
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
        from owlat.flags import resolve_flags

        if obj is None or obj.pk is None:
            return "-"
        flags = resolve_flags(obj.feature_flags)
        return ", ".join(f"{name}: {'on' if on else 'off'}" for name, on in flags.items())

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


# --- API keys ----------------------------------------------------------------------------------------------


def _scope_choices() -> list[tuple[str, str]]:
    from owlat.apikeys import SCOPES

    return [(s, s) for s in SCOPES]


class ApiKeyForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=_scope_choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta:
        model = ApiKey
        fields = ("organization", "name", "scopes", "expires_at")

    def clean_scopes(self) -> list[str]:
        from owlat.apikeys import InvalidScopes, validate_scopes

        try:
            return validate_scopes(list(self.cleaned_data.get("scopes") or []))
        except InvalidScopes as exc:
            raise ValidationError(str(exc))


@admin.register(ApiKey)
class ApiKeyAdmin(TenantModelAdmin):
    form = ApiKeyForm
    manage_permission = "settings:manage"
    list_display = (
        "name",
        "key_prefix",
        "scope_list",
        "last_used_at",
        "is_active",
        "revoked_at",
        "expires_at",
    )
    list_filter = ("is_active",)
    search_fields = ("name", "key_prefix")
    readonly_fields = ("key_prefix", "is_active", "revoked_at", "last_used_at", "created_at")
    actions = ("revoke_keys",)

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ["organization", "name", "scopes", "expires_at"]
        return ["organization", "name", "key_prefix", "scopes", "expires_at", *self.readonly_fields[1:]]

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes or [])

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        from owlat.apikeys import api_key_create

        key, raw = api_key_create(
            organization_id=obj.organization_id,
            name=obj.name,
            scopes=list(form.cleaned_data["scopes"]),
            expires_at=obj.expires_at,
        )
        _adopt(obj, key)
        messages.warning(
            request,
            format_html(
                "API key created. Copy it now — it is shown only once: <code>{}</code>",
                raw,
            ),
        )

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: Any) -> None:
        from owlat.apikeys import api_key_revoke

        revoked = sum(
            api_key_revoke(api_key_id=key.pk, organization_id=key.organization_id) for key in queryset
        )
        self.message_user(request, f"Revoked {revoked} API key(s).", messages.SUCCESS)


# --- contacts ----------------------------------------------------------------------------------------------


class ContactForm(forms.ModelForm):
    source = forms.ChoiceField(choices=ContactSource.choices, initial=ContactSource.API, required=False)

    class Meta:
        model = Contact
        fields = ("organization", "email", "first_name", "last_name", "language", "timezone", "notes")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:
            self.fields.pop("source", None)

    def clean_email(self) -> str | None:
        from owlat.contacts import is_valid_email, normalize_email

        value = (self.cleaned_data.get("email") or "").strip()
        if not value:
            return None
        if not is_valid_email(value):
            raise ValidationError("Enter a valid email address.")
        return normalize_email(value)

    def clean_timezone(self) -> str | None:
        value = (self.cleaned_data.get("timezone") or "").strip()
        if value and not _is_timezone(value):
            raise ValidationError("Enter an IANA time zone name such as Europe/Berlin.")
        return value or None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        email = cleaned.get("email")
        org = cleaned.get("organization") or getattr(self.instance, "organization", None)
        if email and org is not None:
            from owlat.contacts import live_contacts

            clash = live_contacts(org.pk).filter(email=email)
            if not self.instance._state.adding:
                clash = clash.exclude(pk=self.instance.pk)
            if clash.exists():
                self.add_error("email", "A contact with this email already exists.")
        return cleaned


class ContactPropertyValueInline(TenantTabularInline):
    model = ContactPropertyValue
    manage_permission = "contacts:manage"
    fields = ("property", "value")
    extra = 0
    verbose_name = "custom property"
    verbose_name_plural = "custom properties"

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("property")


class ContactTopicForm(forms.ModelForm):
    skip_doi = forms.BooleanField(
        label="Consent given (skip double opt-in)",
        required=False,
        help_text="New memberships of a double-opt-in topic start a confirmation mail unless ticked.",
    )

    class Meta:
        model = ContactTopic
        fields = ("topic",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["topic"].disabled = True
            self.fields["skip_doi"].disabled = True


class ContactTopicInline(TenantTabularInline):
    model = ContactTopic
    form = ContactTopicForm
    manage_permission = "contacts:manage"
    fields = ("topic", "skip_doi", "added_at", "pending_doi_confirmation", "consent_source", "consent_ip")
    readonly_fields = ("added_at", "pending_doi_confirmation", "consent_source", "consent_ip")
    extra = 0
    verbose_name = "topic membership"
    verbose_name_plural = "topic memberships"

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("topic")


class ContactLiveFilter(admin.SimpleListFilter):
    """Soft-deleted contacts are hidden unless asked for (DOM-05)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any):
        return (("deleted", "Deleted"), ("all", "All"))

    def choices(self, changelist: Any):
        value = self.value()
        yield {
            "selected": value is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Live",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": value == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: Any):
        value = self.value()
        if value == "all":
            return queryset
        if value == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        return queryset.filter(deleted_at__isnull=True)


class UnsubscribedFilter(admin.SimpleListFilter):
    title = "globally unsubscribed"
    parameter_name = "unsubscribed"

    def lookups(self, request: HttpRequest, model_admin: Any):
        return (("yes", "Yes"), ("no", "No"))

    def queryset(self, request: HttpRequest, queryset: Any):
        if self.value() == "yes":
            return queryset.filter(unsubscribed_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(unsubscribed_at__isnull=True)
        return queryset


TIMELINE_LIMIT = 50


@admin.register(Contact)
class ContactAdmin(TenantModelAdmin):
    form = ContactForm
    manage_permission = "contacts:manage"
    annotate_permission = "contacts:annotate"
    list_display = (
        "email",
        "first_name",
        "last_name",
        "source",
        "doi_status",
        "topic_count",
        "has_opened",
        "has_clicked",
        "unsubscribed_at",
        "created_at",
    )
    list_filter = (
        ContactLiveFilter,
        "source",
        "doi_status",
        "has_opened",
        "has_clicked",
        UnsubscribedFilter,
        "topic_memberships__topic",
        "language",
    )
    search_fields = ("email", "first_name", "last_name")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    inlines = (ContactPropertyValueInline, ContactTopicInline)
    status_fields = (
        "source",
        "doi_status",
        "doi_confirmed_at",
        "doi_confirmation_source",
        "unsubscribed_at",
        "has_opened",
        "has_clicked",
        "soft_bounce_count",
        "engagement_score",
        "deleted_at",
        "created_at",
        "updated_at",
    )
    actions = ("attest_doi", "unsubscribe_all", "erase_permanently")

    def get_fields(self, request: HttpRequest, obj: Any = None):
        editable = ["organization", "email", "first_name", "last_name", "language", "timezone", "notes"]
        if obj is None:
            return [*editable[:2], "source", *editable[2:]]
        return [*editable, *self.status_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return []
        readonly = list(self.status_fields)
        if self._annotate_only(request):
            readonly += ["email", "first_name", "last_name", "language", "timezone"]
        return readonly

    def _annotate_only(self, request: HttpRequest) -> bool:
        tenancy = get_tenancy(request)
        return not tenancy.allows(self.manage_permission) and tenancy.allows(self.annotate_permission)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Editors annotate (notes only, DOM-02 `contacts:annotate`); owners and admins manage.
        if super().has_change_permission(request, obj):
            return True
        return self._may(request, self.annotate_permission, obj)

    def has_manage_permission(self, request: HttpRequest) -> bool:
        return self._may(request, self.manage_permission)

    def get_inline_instances(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return []  # memberships and properties are added once the contact exists
        return super().get_inline_instances(request, obj)

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(_topics=Count("topic_memberships", distinct=True))

    @admin.display(description="topics", ordering="_topics")
    def topic_count(self, obj: Contact) -> int:
        return obj._topics

    # -- writes through owlat.contacts (triggers, activities, audit)
    def save_model(self, request: HttpRequest, obj: Contact, form: Any, change: bool) -> None:
        from owlat.contacts import EDITABLE_FIELDS, contact_find_or_create, contact_update

        data = form.cleaned_data
        actor = self.actor(request)
        if not change:
            contact, _ = contact_find_or_create(
                organization_id=obj.organization_id,
                email=data.get("email"),
                source=data.get("source") or ContactSource.API,
                actor=actor,
                mode="strict",
                first_name=data.get("first_name"),
                last_name=data.get("last_name"),
                language=data.get("language"),
                timezone=data.get("timezone"),
            )
            if data.get("notes"):
                contact, _ = contact_update(contact=contact, changes={"notes": data["notes"]}, actor=actor)
        else:
            changes = {f: data.get(f) for f in form.changed_data if f in EDITABLE_FIELDS}
            contact = Contact.objects.get(pk=obj.pk)
            if changes:
                contact, _ = contact_update(contact=contact, changes=changes, actor=actor)
        _adopt(obj, contact)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        contact = form.instance
        actor = self.actor(request)
        if formset.model is ContactPropertyValue:
            from owlat.contacts import contact_update

            properties: dict[str, Any] = {}
            for f in formset.forms:
                if not hasattr(f, "cleaned_data") or not f.cleaned_data:
                    continue
                old_key = f.instance.property.key if f.instance.pk else None
                if f in formset.deleted_forms:
                    if old_key:
                        properties[old_key] = None
                    continue
                if not f.has_changed():
                    continue
                new_key = f.cleaned_data["property"].key
                if old_key and old_key != new_key:
                    properties[old_key] = None
                properties[new_key] = f.cleaned_data.get("value") or ""
            if properties:
                contact_update(contact=contact, changes={"properties": properties}, actor=actor)
            _no_formset_changes(formset)
            return
        if formset.model is ContactTopic:
            from owlat.topics import topic_subscribe, topic_unsubscribe

            results = []
            for f in formset.forms:
                if not hasattr(f, "cleaned_data") or not f.cleaned_data:
                    continue
                if f in formset.deleted_forms:
                    if f.instance.pk:
                        topic_unsubscribe(
                            contact=contact, topic=f.instance.topic, source="admin", actor=actor
                        )
                    continue
                if not f.instance.pk and f.cleaned_data.get("topic"):
                    outcome = topic_subscribe(
                        contact=contact,
                        topic=f.cleaned_data["topic"],
                        source="admin",
                        actor=actor,
                        skip_doi=bool(f.cleaned_data.get("skip_doi")),
                    )
                    results.append(f"{f.cleaned_data['topic'].name}: {outcome}")
            if results:
                self.message_user(request, "Topic memberships — " + "; ".join(results), messages.INFO)
            _no_formset_changes(formset)
            return
        super().save_formset(request, form, formset, change)

    def get_deleted_objects(self, objs: Any, request: HttpRequest):
        # The admin's delete is the soft delete (DOM-05): only the contacts themselves disappear from view.
        objs = list(objs)
        return [str(o) for o in objs], {Contact._meta.verbose_name_plural: len(objs)}, set(), []

    def delete_model(self, request: HttpRequest, obj: Contact) -> None:
        from owlat.contacts import contact_soft_delete

        contact_soft_delete(contact=obj, actor=self.actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        from owlat.contacts import contact_soft_delete

        for contact in queryset:
            contact_soft_delete(contact=contact, actor=self.actor(request))

    # -- actions (transitions through services)
    @admin.action(description="Attest double opt-in (consent given)", permissions=["manage"])
    def attest_doi(self, request: HttpRequest, queryset: Any) -> None:
        from owlat.topics import doi_attest

        done = sum(
            bool(doi_attest(contact=c, actor=self.actor(request), source="admin"))
            for c in queryset.filter(deleted_at__isnull=True)
        )
        self.message_user(request, f"Attested double opt-in for {done} contact(s).", messages.SUCCESS)

    @admin.action(description="Unsubscribe from all topics (global opt-out)", permissions=["manage"])
    def unsubscribe_all(self, request: HttpRequest, queryset: Any) -> None:
        from owlat.topics import contact_unsubscribe_all

        count = 0
        for contact in queryset.filter(deleted_at__isnull=True):
            contact_unsubscribe_all(contact=contact, source="admin", actor=self.actor(request))
            count += 1
        self.message_user(request, f"Unsubscribed {count} contact(s) from everything.", messages.SUCCESS)

    @admin.action(description="Erase permanently (cannot be undone)", permissions=["delete"])
    def erase_permanently(self, request: HttpRequest, queryset: Any) -> None:
        from owlat.contacts import contact_erase

        count = 0
        for contact in queryset:
            contact_erase(contact=contact, actor=self.actor(request))
            count += 1
        self.message_user(request, f"Erased {count} contact(s).", messages.SUCCESS)

    # -- the timeline section of the change view
    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        extra_context = dict(extra_context or {})
        obj = self.get_object(request, object_id)
        if obj is not None:
            extra_context["activities"] = list(
                ContactActivity.objects.filter(contact=obj).order_by("-occurred_at", "-id")[:TIMELINE_LIMIT]
            )
            extra_context["events"] = list(
                Event.objects.filter(contact=obj).order_by("-created_at")[:TIMELINE_LIMIT]
            )
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(ContactProperty)
class ContactPropertyAdmin(TenantModelAdmin):
    manage_permission = "contacts:manage"
    list_display = ("key", "label", "type", "value_count", "created_at")
    list_filter = ("type",)
    search_fields = ("key", "label")

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(_values=Count("values"))

    @admin.display(description="contacts with a value", ordering="_values")
    def value_count(self, obj: ContactProperty) -> int:
        return obj._values


# --- topics and segments -----------------------------------------------------------------------------------


@admin.register(Topic)
class TopicAdmin(TenantModelAdmin):
    manage_permission = "topics:manage"
    list_display = (
        "name",
        "member_count",
        "pending_count",
        "require_double_opt_in",
        "is_default",
        "display_order",
        "created_at",
    )
    list_filter = ("require_double_opt_in", "is_default")
    search_fields = ("name", "description")
    fields = (
        "organization",
        "name",
        "description",
        "display_order",
        "is_default",
        "require_double_opt_in",
        "cached_member_count",
    )
    readonly_fields = ("cached_member_count",)

    def get_queryset(self, request: HttpRequest):
        live = Q(memberships__contact__deleted_at__isnull=True)
        return (
            super()
            .get_queryset(request)
            .annotate(
                _members=Count("memberships", filter=live & Q(memberships__pending_doi_confirmation=False)),
                _pending=Count("memberships", filter=live & Q(memberships__pending_doi_confirmation=True)),
            )
        )

    @admin.display(description="members", ordering="_members")
    def member_count(self, obj: Topic) -> int:
        return obj._members

    @admin.display(description="pending DOI", ordering="_pending")
    def pending_count(self, obj: Topic) -> int:
        return obj._pending

    def save_model(self, request: HttpRequest, obj: Topic, form: Any, change: bool) -> None:
        from owlat.topics import TOPIC_FIELDS, topic_create, topic_update

        values = {f: form.cleaned_data[f] for f in TOPIC_FIELDS if f in form.cleaned_data}
        if change:
            topic_update(topic=Topic.objects.get(pk=obj.pk), changes=values)
            obj.refresh_from_db()
            return
        topic = topic_create(organization_id=obj.organization_id, actor=self.actor(request), **values)
        _adopt(obj, topic)

    def _in_use(self, obj: Topic) -> list[dict[str, str]]:
        from owlat.api.inuse import topic_in_use

        return topic_in_use(obj.organization_id, obj.pk)

    def delete_model(self, request: HttpRequest, obj: Topic) -> None:
        used = self._in_use(obj)
        if used:
            raise ValidationError(f"Topic is in use by {', '.join(u['kind'] + ' ' + u['id'] for u in used)}.")
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for topic in queryset:
            if self._in_use(topic):
                self.message_user(request, f"Topic “{topic}” is in use and was kept.", messages.ERROR)
                continue
            topic.delete()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self._in_use(obj):
            return False
        return super().has_delete_permission(request, obj)


class SegmentForm(forms.ModelForm):
    filters = forms.JSONField(
        initial={"logic": "AND", "conditions": []},
        help_text='{"logic": "AND"|"OR", "conditions": [...]} in the condition language (AUT-34).',
        widget=forms.Textarea(attrs={"rows": 12, "cols": 80, "style": "font-family: monospace"}),
    )

    class Meta:
        model = Segment
        fields = ("organization", "name", "description", "filters")

    def clean_filters(self) -> dict[str, Any]:
        from owlat.conditions import ConditionError, canonicalize_filters

        try:
            return canonicalize_filters(self.cleaned_data.get("filters"))
        except ConditionError as exc:
            raise ValidationError(f"Invalid filters: {exc}")


class SegmentChangeList(ChangeList):
    """Computes the live count of every segment on the page in one query per organization."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        segment_live_counts(list(self.result_list))


def segment_live_counts(segments: list[Segment]) -> None:
    """Set `_live_count` on each segment: one aggregate query per organization, corrupt filters count 0."""
    from owlat.conditions import ConditionError, filters_q
    from owlat.contacts import live_contacts

    by_org: dict[Any, list[Segment]] = {}
    for segment in segments:
        by_org.setdefault(segment.organization_id, []).append(segment)
    for org_id, group in by_org.items():
        aggregates = {}
        for i, segment in enumerate(group):
            try:
                aggregates[f"s{i}"] = Count("pk", filter=filters_q(segment.filters, org_id))
            except ConditionError:
                segment._live_count = 0
        if aggregates:
            counts = live_contacts(org_id).aggregate(**aggregates)
            for i, segment in enumerate(group):
                if f"s{i}" in counts:
                    segment._live_count = counts[f"s{i}"]


@admin.register(Segment)
class SegmentAdmin(TenantModelAdmin):
    form = SegmentForm
    manage_permission = "segments:manage"
    list_display = ("name", "live_count", "cached_count", "cached_count_at", "updated_at")
    search_fields = ("name", "description")
    readonly_fields = ("live_count", "cached_count", "cached_count_at")

    def get_changelist(self, request: HttpRequest, **kwargs: Any):
        return SegmentChangeList

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = ["organization", "name", "description", "filters"]
        return fields if obj is None else [*fields, *self.readonly_fields]

    @admin.display(description="live count")
    def live_count(self, obj: Segment) -> int | str:
        if obj is None or obj.pk is None:
            return "-"
        if not hasattr(obj, "_live_count"):
            segment_live_counts([obj])
        return obj._live_count

    def save_model(self, request: HttpRequest, obj: Segment, form: Any, change: bool) -> None:
        from owlat.segments import SEGMENT_FIELDS, segment_create, segment_update

        values = {f: form.cleaned_data[f] for f in SEGMENT_FIELDS if f in form.cleaned_data}
        if change:
            segment_update(segment=Segment.objects.get(pk=obj.pk), changes=values)
            obj.refresh_from_db()
            return
        segment = segment_create(organization_id=obj.organization_id, actor=self.actor(request), **values)
        _adopt(obj, segment)

    def _in_use(self, obj: Segment) -> list[dict[str, str]]:
        from owlat.api.inuse import segment_in_use

        return segment_in_use(obj.organization_id, obj.pk)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self._in_use(obj):
            return False
        return super().has_delete_permission(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for segment in queryset:
            if self._in_use(segment):
                self.message_user(request, f"Segment “{segment}” is in use and was kept.", messages.ERROR)
                continue
            segment.delete()


# --- suppression list ----------------------------------------------------------------------------------------


class BlockedEmailForm(forms.ModelForm):
    class Meta:
        model = BlockedEmail
        fields = ("organization", "email", "notes")

    def clean_email(self) -> str:
        from owlat.contacts import is_valid_email, normalize_email

        value = (self.cleaned_data.get("email") or "").strip()
        if not is_valid_email(value):
            raise ValidationError("Enter a valid email address.")
        return normalize_email(value)


@admin.register(BlockedEmail)
class BlockedEmailAdmin(TenantModelAdmin):
    """DOM-10: operators add and remove manual rows; bounce/complaint rows are evidence and stay."""

    form = BlockedEmailForm
    manage_permission = "contacts:manage"
    list_display = ("email", "reason", "bounce_type", "source_type", "created_at")
    list_filter = ("reason", "bounce_type")
    search_fields = ("email",)
    readonly_fields = ("reason", "bounce_type", "source_type", "source_id", "created_at", "updated_at")

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ["organization", "email", "notes"]
        return ["organization", "email", "notes", *self.readonly_fields]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False if obj is not None else super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.reason != BlockReason.MANUAL:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: BlockedEmail, form: Any, change: bool) -> None:
        from owlat.suppression import suppress

        row = suppress(
            organization_id=obj.organization_id,
            email=obj.email,
            reason=BlockReason.MANUAL,
            notes=obj.notes or None,
            source_type=None,
        )
        _adopt(obj, row)

    def delete_model(self, request: HttpRequest, obj: BlockedEmail) -> None:
        from owlat.suppression import unsuppress

        unsuppress(organization_id=obj.organization_id, email=obj.email)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for row in queryset.filter(reason=BlockReason.MANUAL):
            self.delete_model(request, row)


# --- logs: audit, events, webhooks ---------------------------------------------------------------------------


@admin.register(AuditLog)
class AuditLogAdmin(TenantModelAdmin):
    read_only = True
    list_display = ("created_at", "action", "resource", "resource_id", "user_id")
    list_filter = ("action", "resource")
    search_fields = ("resource_id", "user_id", "action")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in AuditLog._meta.fields]


@admin.register(Event)
class EventAdmin(TenantModelAdmin):
    read_only = True
    list_display = ("id", "event_name", "contact", "triggered_automations", "created_at")
    list_filter = ("event_name",)
    search_fields = ("id", "event_name", "contact__email")
    list_select_related = ("contact",)
    ordering = ("-created_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in Event._meta.fields]


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=1000, assume_scheme="https")
    events = forms.MultipleChoiceField(
        choices=lambda: [(e, e) for e in _webhook_event_types()],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Event types to receive; none ticked = all.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("organization", "url", "description", "events", "is_active")


def _webhook_event_types() -> tuple[str, ...]:
    from owlat.webhooks import WEBHOOK_EVENT_TYPES

    return WEBHOOK_EVENT_TYPES


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(TenantModelAdmin):
    form = WebhookEndpointForm
    manage_permission = "settings:manage"
    feature_flag = "webhooks"
    list_display = ("url", "is_active", "event_list", "delivery_count", "failed_count", "created_at")
    list_filter = ("is_active",)
    search_fields = ("url", "description")

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = ["organization", "url", "description", "events", "is_active"]
        return fields if obj is None else [*fields, "secret", "created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return ["secret", "created_at"] if obj is not None else []

    def get_queryset(self, request: HttpRequest):
        return (
            super()
            .get_queryset(request)
            .annotate(
                _deliveries=Count("deliveries"),
                _failed=Count("deliveries", filter=Q(deliveries__status="failed")),
            )
        )

    @admin.display(description="events")
    def event_list(self, obj: WebhookEndpoint) -> str:
        return ", ".join(obj.events or []) or "all"

    @admin.display(description="deliveries", ordering="_deliveries")
    def delivery_count(self, obj: WebhookEndpoint) -> int:
        return obj._deliveries

    @admin.display(description="failed", ordering="_failed")
    def failed_count(self, obj: WebhookEndpoint) -> int:
        return obj._failed

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form: Any, change: bool) -> None:
        if not change and not obj.secret:
            obj.secret = "whsec_" + secrets.token_urlsafe(32)
        super().save_model(request, obj, form, change)


class WebhookAttemptInline(TenantTabularInline):
    model = WebhookAttempt
    read_only = True
    fields = ("attempt", "status_code", "error", "duration_ms", "attempted_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(TenantModelAdmin):
    read_only = True
    feature_flag = "webhooks"
    list_display = ("event_type", "endpoint", "status", "attempts", "last_status_code", "created_at")
    list_filter = ("status", "event_type", "endpoint")
    search_fields = ("event_id", "event_type")
    list_select_related = ("endpoint",)
    ordering = ("-created_at",)
    inlines = (WebhookAttemptInline,)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in WebhookDelivery._meta.fields]


# --- domains and senders (DOM-12) ----------------------------------------------------------------------------


@admin.register(Domain)
class DomainAdmin(TenantModelAdmin):
    manage_permission = "settings:manage"
    list_display = ("domain", "status", "last_verified_at", "provider_type", "created_at")
    list_filter = ("status",)
    search_fields = ("domain",)
    readonly_fields = ("status", "dns_records", "last_verified_at", "created_at")

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = ["organization", "domain", "provider_type"]
        return fields if obj is None else [*fields, *self.readonly_fields]


class CampaignSenderForm(forms.ModelForm):
    class Meta:
        model = CampaignSender
        fields = ("organization", "email", "display_name", "is_enabled")

    def clean_email(self) -> str:
        from owlat.contacts import is_valid_email, normalize_email

        value = (self.cleaned_data.get("email") or "").strip()
        if not is_valid_email(value):
            raise ValidationError("Enter a valid email address.")
        return normalize_email(value)


@admin.register(CampaignSender)
class CampaignSenderAdmin(TenantModelAdmin):
    """DOM-12: curating senders is admin-only; at most one default (set with the action)."""

    form = CampaignSenderForm
    manage_permission = "settings:manage"
    list_display = ("email", "display_name", "is_enabled", "is_default", "created_by", "created_at")
    list_filter = ("is_enabled", "is_default")
    search_fields = ("email", "display_name")
    readonly_fields = ("is_default", "created_by", "created_at")
    actions = ("make_default",)

    def save_model(self, request: HttpRequest, obj: CampaignSender, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = self.actor(request)
        super().save_model(request, obj, form, change)

    @admin.action(description="Make the default sender", permissions=["change"])
    def make_default(self, request: HttpRequest, queryset: Any) -> None:
        sender = queryset.first()
        if sender is None or queryset.count() != 1:
            self.message_user(request, "Select exactly one sender.", messages.ERROR)
            return
        with transaction.atomic():
            CampaignSender.objects.filter(organization_id=sender.organization_id, is_default=True).update(
                is_default=False
            )
            CampaignSender.objects.filter(pk=sender.pk).update(is_default=True)
        self.message_user(request, f"{sender.email} is now the default sender.", messages.SUCCESS)


# --- background work (platform staff) ------------------------------------------------------------------------


@admin.register(DueTask)
class DueTaskAdmin(PlatformOnlyAdmin):
    read_only = True
    list_display = ("func", "due_at", "queue", "attempts", "lease_until", "created_at")
    list_filter = ("queue",)
    search_fields = ("func",)
    ordering = ("due_at",)


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(PlatformOnlyAdmin):
    read_only = True
    list_display = ("name", "beat_at", "pid", "host")


@admin.register(SendingStat)
class SendingStatAdmin(TenantModelAdmin):
    """DLV-11 daily sending counters per sender domain (read-only)."""

    read_only = True
    list_display = (
        "day",
        "sender_domain",
        "sent",
        "delivered",
        "opened",
        "clicked",
        "bounced",
        "hard_bounced",
        "complained",
        "failed",
    )
    list_filter = ("day", "sender_domain")
    ordering = ("-day", "sender_domain")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in SendingStat._meta.fields]
