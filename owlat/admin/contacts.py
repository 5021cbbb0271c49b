"""Contacts (writes through owlat.contacts and owlat.topics), their properties, topic memberships and timeline.
The contact form and inlines are in `contact_forms`, the list's filters in `contact_filters`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils import timezone

from owlat.admin.contact_filters import ContactLiveFilter, LanguageFilter, TopicFilter, UnsubscribedFilter
from owlat.admin.contact_forms import ContactForm, ContactPropertyValueInline, ContactTopicInline
from owlat.admin.pagination import EstimatedCountMixin
from owlat.admin.service_writes import adopt_written_row, clear_formset_changes
from owlat.admin_tenancy import TenantModelAdmin, get_tenancy
from owlat.models import Contact, ContactProperty, ContactPropertyValue, ContactSource, ContactTopic

# --- contacts ----------------------------------------------------------------------------------------------


@admin.register(Contact)
class ContactAdmin(EstimatedCountMixin, TenantModelAdmin):
    form = ContactForm
    manage_permission = "contacts:manage"
    annotate_permission = "contacts:annotate"

    def get_urls(self):
        from django.urls import path

        from owlat.forms.imports import contact_import_view

        view = self.admin_site.admin_view(lambda request: contact_import_view(self, request))
        return [path("import/", view, name="owlat_contact_import"), *super().get_urls()]

    list_display = (
        "email",
        "name",
        "source",
        "doi_status",
        "topic_count",
        "has_opened",
        "has_clicked",
        "unsubscribed",
        "created",
    )
    list_filter = (
        ContactLiveFilter,
        "source",
        "doi_status",
        "has_opened",
        "has_clicked",
        UnsubscribedFilter,
        TopicFilter,
        LanguageFilter,
    )
    search_fields = ("email", "first_name", "last_name")
    ordering = ("-created_at",)
    list_per_page = 50
    # No COUNT(*) of every contact: an estimate for the unfiltered list, a capped count for a filtered one.
    show_full_result_count = False
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
            return editable
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
        # A correlated subquery (evaluated for the page's rows only), not a GROUP BY over every contact.
        topics = (
            ContactTopic.objects.filter(contact=OuterRef("pk"))
            .order_by()
            .values("contact")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return super().get_queryset(request).annotate(_topics=Coalesce(Subquery(topics), 0))

    @admin.display(description="name", ordering="last_name")
    def name(self, obj: Contact) -> str:
        return " ".join(p for p in (obj.first_name, obj.last_name) if p) or "–"

    @admin.display(description="unsubscribed", boolean=True, ordering="unsubscribed_at")
    def unsubscribed(self, obj: Contact) -> bool:
        return obj.unsubscribed_at is not None

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: Contact) -> str:
        return timezone.localtime(obj.created_at).strftime("%Y-%m-%d")

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
                source=ContactSource.ADMIN,  # the operator typed it in (not the API)
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
        adopt_written_row(obj, contact)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        contact = form.instance
        actor = self.actor(request)
        if formset.model is ContactPropertyValue:
            from owlat.contacts import contact_update

            properties: dict[str, Any] = {}
            for f in formset.forms:
                if not hasattr(f, "cleaned_data") or not f.cleaned_data:
                    continue
                old_key = f.instance.property.key if not f.instance._state.adding else None
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
            clear_formset_changes(formset)
            return
        if formset.model is ContactTopic:
            from owlat.topics import topic_subscribe, topic_unsubscribe

            results = []
            for f in formset.forms:
                if not hasattr(f, "cleaned_data") or not f.cleaned_data:
                    continue
                if f in formset.deleted_forms:
                    if not f.instance._state.adding:
                        topic_unsubscribe(
                            contact=contact, topic=f.instance.topic, source="admin", actor=actor
                        )
                    continue
                if f.instance._state.adding and f.cleaned_data.get("topic"):
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
            clear_formset_changes(formset)
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

    # -- the timeline at the top of the change view, the apps' sections below the form
    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        from owlat.admin.contact_timeline import contact_sections

        extra_context = dict(extra_context or {})
        obj = self.get_object(request, object_id)
        if obj is not None:
            extra_context.update(self._timeline_context(request, obj))
            extra_context["contact_sections"] = contact_sections(request, obj)
        return super().change_view(request, object_id, form_url, extra_context)

    def _timeline_context(self, request: HttpRequest, contact: Contact) -> dict[str, Any]:
        """One page of `owlat.timeline` (newest first); `?timeline_page=N` opens the older rows."""
        from owlat.timeline import MAX_PAGES, contact_timeline

        raw = request.GET.get("timeline_page", "")[:8]
        number = 1
        if raw:
            if raw.isdigit() and 1 <= int(raw) <= MAX_PAGES:
                number = int(raw)
            else:
                messages.warning(
                    request,
                    f"timeline_page: “{raw}” is not a page from 1 to {MAX_PAGES}; showing the newest rows.",
                )
        page = contact_timeline(contact, page=number)

        def link(n: int) -> str:
            return "?" + urlencode({"timeline_page": n}) + "#contact-timeline"

        return {
            "timeline": page.rows,
            "timeline_page": page.number,
            "timeline_more": link(page.number + 1) if page.has_older else "",
            "timeline_newer": link(page.number - 1) if page.number > 1 else "",
        }


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
