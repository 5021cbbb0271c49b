"""The suppression list (DOM-10): manual rows are added and removed; bounce/complaint rows stay as evidence."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from owlat.admin.service_writes import adopt_written_row
from owlat.admin_tenancy import (
    TenantModelAdmin,
)
from owlat.models import (
    BlockedEmail,
    BlockReason,
)

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
    """DOM-10: operators add and remove manual rows; bounce/complaint rows are evidence: they are not edited or
    deleted, but an operator may lift one (a confirmation page, then `suppression_lift` with an audit row)."""

    form = BlockedEmailForm
    manage_permission = "contacts:manage"
    list_display = ("email", "reason", "bounce_type", "why", "created_at", "lift_link")
    list_filter = ("reason", "bounce_type")
    search_fields = ("email", "notes")
    readonly_fields = ("reason", "bounce_type", "source_type", "source_id", "created_at", "updated_at")

    @admin.display(description="why")
    def why(self, obj: BlockedEmail) -> str:
        """The reason, status code and diagnostic of the bounce that suppressed it (or the operator's note)."""
        text = obj.notes or ""
        return text if len(text) <= 160 else text[:157] + "…"

    @admin.display(description="")
    def lift_link(self, obj: BlockedEmail) -> str:
        url = reverse("admin:owlat_blockedemail_lift", args=[obj.pk])
        return format_html('<a href="{}">Lift…</a>', url)

    def get_urls(self):
        lift = self.admin_site.admin_view(self.lift_view)
        return [path("<path:object_id>/lift/", lift, name="owlat_blockedemail_lift"), *super().get_urls()]

    def lift_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Lift one suppression: GET asks for confirmation naming the consequences, POST lifts it."""
        from owlat.suppression import suppression_lift

        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404("No such suppressed address in this organization.")
        if not self._may(request, self.manage_permission, obj):
            raise PermissionDenied
        changelist = reverse("admin:owlat_blockedemail_changelist")
        if request.method == "POST":
            note = (request.POST.get("note") or "").strip()[:500]
            suppression_lift(
                organization_id=obj.organization_id,
                email=obj.email,
                actor=self.actor(request),
                note=note,
            )
            messages.success(request, f"The suppression of {obj.email} was lifted; mail goes to it again.")
            return HttpResponseRedirect(changelist)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Lift the suppression of {obj.email}?",
            "opts": self.model._meta,
            "original": obj,
            "changelist": changelist,
        }
        return TemplateResponse(request, "admin/owlat/blockedemail/lift.html", context)

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
        adopt_written_row(obj, row)

    def delete_model(self, request: HttpRequest, obj: BlockedEmail) -> None:
        from owlat.suppression import unsuppress

        unsuppress(organization_id=obj.organization_id, email=obj.email)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for row in queryset.filter(reason=BlockReason.MANUAL):
            self.delete_model(request, row)
