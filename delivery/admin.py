"""Delivery back-office (D-12): send rows with filters and a per-send timeline, the `local` provider's outbox,
the provider configuration status, and campaign counters. Status is read-only (DOM-20); the only write is the
explicit operator re-send of outcome-unknown rows (D-07), through `delivery.services`. The suppression list is
managed on the kernel's `BlockedEmail` screen."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin, messages
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from unfold.paginator import InfinitePaginator

from delivery import (
    admin_bounces,  # noqa: F401  (received bounces, their contact section)
    admin_health,  # noqa: F401  (registers the provider health screen, DLV-17)
)
from delivery.models import CampaignSendCounters, EmailSend, LocalMessage, TransactionalSend
from delivery.providers import provider_status
from owlat.admin.contact_timeline import ContactSection, Link, register_contact_section
from owlat.admin_tenancy import PlatformOnlyAdmin, TenantModelAdmin, get_tenancy
from owlat.sandbox import sandboxed_frame, sandboxed_response

TIMELINE_FIELDS = (
    ("queued_at", "Queued"),
    ("claimed_at", "Claimed by a worker"),
    ("handed_off_at", "Handed to the provider"),
    ("sent_at", "Accepted by the provider (sent)"),
    ("delivered_at", "Delivered"),
    ("opened_at", "First opened"),
    ("clicked_at", "First clicked"),
    ("bounced_at", "Bounced"),
    ("complained_at", "Complained"),
    ("failed_at", "Failed"),
    ("unsubscribed_at", "Unsubscribed"),
)


def timeline(obj: Any) -> list[tuple[Any, str, str]]:
    """(time, event, detail) rows of a send, oldest first: its monotonic timestamps are its history."""
    rows: list[tuple[Any, str, str]] = []
    for field, label in TIMELINE_FIELDS:
        value = getattr(obj, field, None)
        if value is None:
            continue
        detail = ""
        if field == "sent_at":
            detail = f"{obj.provider_type or ''} {obj.provider_message_id or ''}".strip()
        elif field == "bounced_at":
            detail = f"{obj.bounce_type or ''} {obj.error_message or ''}".strip()
        elif field == "failed_at":
            detail = f"{obj.error_code or ''}: {obj.error_message or ''}"
        elif field == "opened_at":
            detail = f"{obj.open_count} open(s)"
        rows.append((value, label, detail))
    for click in obj.clicked_links or []:
        rows.append((click.get("clickedAt"), "Click", click.get("url", "")))
    if obj.outcome_unknown:
        rows.append(
            (obj.handed_off_at, "Outcome unknown", f"{obj.error_code or ''}: {obj.error_message or ''}")
        )
    rows.sort(key=lambda r: str(r[0]))
    return rows


class CampaignFilter(admin.SimpleListFilter):
    title = "campaign"
    parameter_name = "campaign"

    def lookups(self, request: HttpRequest, model_admin: Any):
        qs = model_admin.get_queryset(request).order_by("-queued_at").values_list("campaign_id", flat=True)
        seen: list[Any] = []
        for cid in qs[:2000]:
            if cid not in seen:
                seen.append(cid)
            if len(seen) >= 30:
                break
        return [(str(c), str(c)) for c in seen]

    def queryset(self, request: HttpRequest, queryset: Any):
        value = self.value()
        if not value:
            return queryset
        import uuid

        try:
            return queryset.filter(campaign_id=uuid.UUID(value))
        except ValueError:
            return queryset.none()


#: what every send row shows after its own fields: the delivery outcome
DELIVERY_FIELDS = (
    "status",
    "provider_type",
    "provider_message_id",
    "message_id",
    "error_code",
    "error_message",
    "open_count",
    "clicked_links",
    "bounce_type",
    "outcome_unknown",
    "dispatch_attempts",
)


def row_fieldsets(*own: str) -> tuple:
    """A send row's change page: the timeline, then its own fields (recipient, content) and `DELIVERY_FIELDS`."""
    return ((None, {"fields": ("timeline_table",)}), ("Row", {"fields": (*own, *DELIVERY_FIELDS)}))


class SendAdminMixin:
    """Read-only send rows; the change view shows the timeline.

    Send tables are the biggest in the system: no date hierarchy (it scans every row for its dates) and no full
    `COUNT(*)` per page (`show_full_result_count = False` and unfold's `InfinitePaginator`: next/previous pages
    without a count)."""

    list_per_page = 50
    show_full_result_count = False
    paginator = InfinitePaginator
    actions = ("resend_unknown",)
    ordering = ("-queued_at",)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="opened", boolean=True)
    def opened(self, obj: Any) -> bool:
        return obj.opened_at is not None

    @admin.display(description="clicked", boolean=True)
    def clicked(self, obj: Any) -> bool:
        return obj.clicked_at is not None

    def has_resend_permission(self, request: HttpRequest) -> bool:
        return get_tenancy(request).allows("organization:manage")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in self.model._meta.concrete_fields] + ["timeline_table"]

    @admin.display(description="Timeline")
    def timeline_table(self, obj: Any) -> str:
        rows = timeline(obj)
        if not rows:
            return "—"
        body = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", ((str(t), e, d) for t, e, d in rows)
        )
        return format_html("<table><tr><th>When</th><th>Event</th><th>Detail</th></tr>{}</table>", body)

    @admin.action(
        description="Re-send selected outcome-unknown rows (explicit operator re-send)",
        permissions=["resend"],
    )
    def resend_unknown(self, request: HttpRequest, queryset: Any) -> None:
        from delivery.services import sends_resend_unknown

        ids = [
            str(pk)
            for pk in queryset.filter(status="queued", outcome_unknown=True).values_list("pk", flat=True)
        ]
        count = sends_resend_unknown(self.model.ref_kind, ids)
        self.message_user(request, f"Re-sending {count} outcome-unknown row(s).", messages.SUCCESS)


@admin.register(EmailSend)
class EmailSendAdmin(SendAdminMixin, TenantModelAdmin):
    list_display = (
        "contact_email",
        "personalized_subject",
        "email_template",
        "status",
        "opened",
        "clicked",
        "ab_variant",
        "queued_at",
        "error_code",
    )
    list_filter = ("status", "outcome_unknown", CampaignFilter, "bounce_type")
    list_select_related = ("email_template",)
    search_fields = ("contact_email", "provider_message_id", "message_id")
    fieldsets = row_fieldsets(
        "id",
        "campaign_id",
        "contact",
        "contact_email",
        "contact_first_name",
        "contact_last_name",
        "personalized_subject",
        "ab_variant",
        "language",
        "email_template",
    )

    def get_urls(self):
        return [
            path(
                "provider-status/",
                self.admin_site.admin_view(self.provider_status_view),
                name="delivery_provider_status",
            ),
            *super().get_urls(),
        ]

    def provider_status_view(self, request: HttpRequest):
        context = {
            **self.admin_site.each_context(request),
            "title": "Delivery provider status",
            "status": provider_status(),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/delivery/provider_status.html", context)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):
        status = provider_status()
        extra_context = dict(extra_context or {})
        extra_context["provider_status"] = status
        extra_context["provider_status_url"] = reverse("admin:delivery_provider_status")
        if not status["configured"]:
            self.message_user(
                request, f"No delivery provider configured: {status['problem']}", messages.WARNING
            )
        return super().changelist_view(request, extra_context)


@admin.register(TransactionalSend)
class TransactionalSendAdmin(SendAdminMixin, TenantModelAdmin):
    list_display = (
        "email",
        "kind",
        "subject",
        "template",
        "status",
        "opened",
        "clicked",
        "queued_at",
        "error_code",
    )
    list_filter = ("kind", "status", "outcome_unknown", "bounce_type")
    list_select_related = ("email_template", "transactional_email")
    search_fields = ("email", "provider_message_id", "message_id", "subject")
    KIND_TITLES: ClassVar[dict[str, str]] = {
        "transactional": "Transactional sends",
        "automation": "Automation mails",
        "agent_reply": "Agent replies",
        "test": "Test sends",
    }

    @admin.display(description="template")
    def template(self, obj: TransactionalSend) -> str:
        return str(obj.email_template or obj.transactional_email or "—")

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):
        # Sends are listed by kind (the sidebar links each kind): the title says which.
        kind = request.GET.get("kind__exact")
        extra_context = dict(extra_context or {})
        extra_context["title"] = self.KIND_TITLES.get(kind or "", "All sends (every kind)")
        return super().changelist_view(request, extra_context)

    fieldsets = row_fieldsets(
        "id",
        "kind",
        "contact",
        "email",
        "subject",
        "language",
        "transactional_email",
        "email_template",
        "automation_id",
        "inbound_message_id",
        "from_email",
    )


@admin.register(LocalMessage)
class LocalMessageAdmin(TenantModelAdmin):
    """The `local` provider's outbox (D-09)."""

    list_display = ("subject", "to", "from_email", "send_kind", "created_at")
    search_fields = ("subject", "to", "message_id")
    list_filter = ("send_kind",)
    fields = (
        "created_at",
        "from_email",
        "to",
        "subject",
        "message_id",
        "send_kind",
        "send_id",
        "preview",
        "text",
        "raw",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return get_tenancy(request).is_platform_staff

    @admin.display(description="HTML")
    def preview(self, obj: LocalMessage) -> str:
        url = reverse("admin:delivery_localmessage_html", args=[obj.pk])
        return sandboxed_frame(url, title="The message's HTML", height=480)

    def get_urls(self):
        return [
            path(
                "<path:object_id>/html/",
                self.admin_site.admin_view(self.html_view),
                name="delivery_localmessage_html",
            ),
            *super().get_urls(),
        ]

    def html_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The stored message's HTML as a sandboxed document (owlat.sandbox) for the frame of its page."""
        obj = self.get_object(request, object_id)
        if obj is None or not self.has_view_permission(request, obj):
            raise Http404("Message not found")
        return sandboxed_response(obj.html)


@admin.register(CampaignSendCounters)
class CampaignSendCountersAdmin(PlatformOnlyAdmin):
    list_display = readonly_fields = ("campaign_id", *CampaignSendCounters.COUNTERS, "updated_at")
    read_only = True


# --- the contact page's email history (owlat.admin.contact_timeline registry) ----------------------------

EMAIL_HISTORY_LIMIT = 50


def contact_email_history(request: HttpRequest, contact: Any) -> ContactSection:
    """Every mail to the contact, newest first: subject, template, kind, status, opened, clicked (two queries)."""
    rows: list[tuple[Any, list[Any]]] = []
    campaign = (
        EmailSend.objects.filter(contact=contact, organization_id=contact.organization_id)
        .select_related("email_template")
        .order_by("-queued_at")[:EMAIL_HISTORY_LIMIT]
    )
    for send in campaign:
        rows.append(
            (send.queued_at, _history_row(send, "campaign", send.personalized_subject, send.email_template))
        )
    other = (
        TransactionalSend.objects.filter(contact=contact, organization_id=contact.organization_id)
        .select_related("email_template", "transactional_email")
        .order_by("-queued_at")[:EMAIL_HISTORY_LIMIT]
    )
    for send in other:
        template = send.email_template or send.transactional_email
        rows.append((send.queued_at, _history_row(send, send.kind, send.subject, template)))
    rows.sort(key=lambda r: r[0], reverse=True)
    return ContactSection(
        title="Email history",
        columns=["Sent", "Subject", "Template", "Kind", "Status", "Opened", "Clicked"],
        rows=[row for _when, row in rows[:EMAIL_HISTORY_LIMIT]],
        empty="No email sent to this contact yet.",
        anchor="contact-email-history",
    )


def _history_row(send: Any, kind: str, subject: str | None, template: Any) -> list[Any]:
    name = "emailsend" if kind == "campaign" else "transactionalsend"
    when = timezone.localtime(send.queued_at).strftime("%Y-%m-%d %H:%M")
    return [
        Link(when, reverse(f"admin:delivery_{name}_change", args=[send.pk])),
        subject or "–",
        str(template) if template is not None else "–",
        kind.replace("_", " "),
        send.status,
        send.opened_at is not None,
        send.clicked_at is not None,
    ]


register_contact_section(contact_email_history)
