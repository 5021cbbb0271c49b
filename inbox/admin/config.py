"""Admin screens of the inbox's configuration: the agent configuration per organization (a form, no JSON, the
same validation and writer as the API) and the knowledge entries."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from inbox.configuration import AGENT_CONFIG_FIELDS, agent_config_errors, agent_config_update
from inbox.models import AgentConfig, KnowledgeEntry
from owlat.admin_tenancy import TenantModelAdmin

WEEKDAYS = [
    (1, "Monday"),
    (2, "Tuesday"),
    (3, "Wednesday"),
    (4, "Thursday"),
    (5, "Friday"),
    (6, "Saturday"),
    (7, "Sunday"),
]


class AgentConfigForm(forms.ModelForm):
    working_days = forms.TypedMultipleChoiceField(
        choices=WEEKDAYS,
        coerce=int,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        initial=[1, 2, 3, 4, 5],
    )
    shadow_mode = forms.BooleanField(
        required=False, initial=True, help_text="Log auto decisions instead of sending."
    )

    class Meta:
        model = AgentConfig
        # the operator's fields (inbox.configuration, which the API edits too); shadow mode is the form's own
        # `shadow_mode` checkbox, which defaults to on
        fields = tuple(name for name in AGENT_CONFIG_FIELDS if name != "is_shadow_mode")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance and self.instance.pk:
            self.fields["shadow_mode"].initial = self.instance.shadow_mode
            self.fields["working_days"].initial = self.instance.weekdays

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        values = {name: data[name] for name in AGENT_CONFIG_FIELDS if data.get(name) is not None}
        for name, message in agent_config_errors(values).items():  # the rules the API applies too
            if name in self.fields and name not in self.errors:
                self.add_error(name, message)
        return data

    def save(self, commit: bool = True) -> AgentConfig:
        self.instance.is_shadow_mode = self.cleaned_data.get("shadow_mode", True)
        self.instance.working_days = sorted(self.cleaned_data.get("working_days") or [])
        return super().save(commit=commit)


@admin.register(AgentConfig)
class AgentConfigAdmin(TenantModelAdmin):
    manage_permission = "organization:manage"
    form = AgentConfigForm
    list_display = (
        "organization",
        "is_auto_reply_enabled",
        "shadow",
        "daily_auto_reply_count",
        "max_daily_auto_replies",
    )
    readonly_fields = (
        "inbound_endpoint",
        "daily_auto_reply_count",
        "daily_auto_reply_reset_at",
        "breakers_view",
    )

    @admin.display(description="circuit breakers")
    def breakers_view(self, obj: AgentConfig) -> str:
        from inbox.breakers import open_breakers_qs

        if not obj.pk:
            return "—"
        rows = list(open_breakers_qs(obj.organization_id))
        if not rows:
            return "All closed: auto-send is not paused."
        return format_html_join(
            "",
            '<p><a href="{}">{}</a> is open until {}: {}</p>',
            (
                (reverse("admin:inbox_circuitbreaker_change", args=[b.pk]), b.kind, b.closes_at, b.reason)
                for b in rows
            ),
        )

    @admin.display(description="shadow mode", boolean=True)
    def shadow(self, obj: AgentConfig) -> bool:
        return obj.shadow_mode

    @admin.display(description="raw inbound endpoint (POST message/rfc822)")
    def inbound_endpoint(self, obj: AgentConfig) -> str:
        if not obj.pk:
            return "—"
        from inbox.configuration import inbound_secret_hint

        return format_html(
            "<code>POST /inbound/raw</code> with the header <code>Authorization: Bearer &lt;inbound secret&gt;</code> "
            "(or HTTP basic auth with the secret as password). Secret: <code>{}</code> — only owners see it in "
            "full and can rotate it.",
            inbound_secret_hint(obj.inbound_secret),
        )

    @admin.display(description="inbound secret (owners only)")
    def inbound_secret_revealed(self, obj: AgentConfig) -> str:
        if not obj.pk:
            return "—"
        url = reverse("admin:inbox_agentconfig_rotate_secret", args=[obj.pk])
        return format_html(
            '<code>{}</code> · <a href="{}" class="text-primary-600 underline">Rotate inbound secret…</a>',
            obj.inbound_secret,
            url,
        )

    def _may_see_secret(self, request: HttpRequest) -> bool:
        return self.tenancy(request).allows("inbox:secret")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "inbound_secret_revealed"] if self._may_see_secret(request) else fields

    def get_fields(self, request: HttpRequest, obj: Any = None):
        hidden = ("shadow_mode", "inbound_secret_revealed")
        fields = [f for f in super().get_fields(request, obj) if f not in hidden]
        idx = fields.index("is_auto_reply_enabled") + 1 if "is_auto_reply_enabled" in fields else len(fields)
        fields.insert(idx, "shadow_mode")
        if obj is not None and self._may_see_secret(request):
            fields.insert(fields.index("inbound_endpoint") + 1, "inbound_secret_revealed")
        return fields

    def get_urls(self):
        return [
            path(
                "<path:object_id>/rotate-secret/",
                self.admin_site.admin_view(self.rotate_secret_view),
                name="inbox_agentconfig_rotate_secret",
            ),
            *super().get_urls(),
        ]

    def rotate_secret_view(self, request: HttpRequest, object_id: str):
        """Owners only: GET asks for confirmation (the old secret stops working at once), POST rotates and shows
        the new secret once."""
        from django.template.response import TemplateResponse

        from inbox.configuration import inbound_secret_rotate

        obj = self.get_object(request, object_id)
        if obj is None or not self.has_view_permission(request, obj):
            raise PermissionDenied
        if not self._may_see_secret(request):
            raise PermissionDenied("Only owners can rotate the inbound secret.")
        context = {
            **self.admin_site.each_context(request),
            "title": "Rotate the inbound secret?",
            "opts": self.model._meta,
            "original": obj,
            "back": reverse("admin:inbox_agentconfig_change", args=[obj.pk]),
        }
        if request.method == "POST":  # shown on this page, not in a message (those travel in a cookie)
            secret = inbound_secret_rotate(organization_id=obj.organization_id, actor=self.actor(request))
            context.update(title="New inbound secret", new_secret=secret)
        return TemplateResponse(request, "admin/inbox/agentconfig/rotate_secret.html", context)

    def save_model(self, request: HttpRequest, obj: AgentConfig, form: Any, change: bool) -> None:
        if not change:
            super().save_model(request, obj, form, change)
            return
        # the same writer as the API: validation, audit row, auto-reply off cancels pending autonomous sends
        changes = {name: getattr(obj, name) for name in AGENT_CONFIG_FIELDS}
        _, n = agent_config_update(
            organization_id=obj.organization_id, changes=changes, actor=self.actor(request)
        )
        if n:
            messages.info(request, f"Auto-reply off: {n} pending automatic send(s) cancelled.")


@admin.register(KnowledgeEntry)
class KnowledgeEntryAdmin(TenantModelAdmin):
    manage_permission = "organization:manage"
    list_display = ("title", "is_internal", "source", "updated_at")
    list_filter = ("is_internal",)
    search_fields = ("title", "content")
    fields = ("title", "content", "is_internal", "source")
