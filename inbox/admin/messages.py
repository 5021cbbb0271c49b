"""Admin screens of the inbox's messages (D-12): review queue (oldest first, by our time of receipt), quarantine,
all messages with the per-step timeline.

Messages are read-only except the draft (saved through `inbox.review.message_edit`); every status change is a
button calling `inbox.review` (retry: `inbox.retry`), which goes through the lifecycle; after it the operator
returns to the queue the message left (approve, reject and edit land on the review queue, with the Undo button
and its countdown on top while the send waits). The sender's HTML is never part of the page: the
body shown is the visible text (hidden content stripped), escaped; the original HTML is only shown in a frame of
its own, a sandboxed document without remote content (owlat.sandbox), and not for quarantined mail.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html_join
from django.utils.http import url_has_allowed_host_and_scheme

from inbox import review
from inbox.admin.display import MessageDisplayMixin
from inbox.admin.retry import RetryAdminMixin
from inbox.admin_attachments import AttachmentsAdminMixin
from inbox.clarification import message_clarify, questions_of
from inbox.models import (
    InboundMessage,
    ProcessingStatus,
    QuarantinedMessage,
    ReviewQueueMessage,
)
from inbox.retry import message_restart
from owlat.admin_tenancy import TenantModelAdmin

P = ProcessingStatus
VERBS = {
    "approve": (review.message_approve, "Approve and send", (P.DRAFT_READY,)),
    "reject": (review.message_reject, "Reject", (P.DRAFT_READY,)),
    "archive": (
        review.message_archive,
        "Archive",
        tuple(s for s in P if s not in (P.SENT, P.REJECTED, P.ARCHIVED)),
    ),
    "release": (review.message_release, "Release from quarantine", (P.QUARANTINED,)),
    "retry": (message_restart, "Retry", (P.FAILED,)),
    "undo": (review.pending_send_cancel, "Undo send", (P.APPROVED,)),
    "block-sender": (review.message_block_sender, "Block sender", (P.DRAFT_READY, P.QUARANTINED, P.RECEIVED)),
    "answer": (message_clarify, "Answer and draft", (P.AWAITING_CLARIFICATION,)),
}


class DraftForm(forms.ModelForm):
    class Meta:
        model = InboundMessage
        fields = ("draft_subject", "draft_response")
        widgets = {"draft_response": forms.Textarea(attrs={"rows": 12, "cols": 90})}


class InboundMessageAdmin(RetryAdminMixin, MessageDisplayMixin, AttachmentsAdminMixin, TenantModelAdmin):
    manage_permission = "organization:manage"
    form = DraftForm
    list_display = ("subject_or_none", "from_email", "processing_status", "category", "received_at")
    list_filter = ("processing_status",)
    search_fields = ("subject", "from_email", "message_id")
    list_select_related = ("contact",)
    ordering = ("-received_at",)
    readonly_fields = (
        "review_buttons",
        "processing_status",
        "from_line",
        "to_line",
        "subject",
        "received_at",
        "processed_at",
        "body_sanitized",
        "html_frame",
        "attachments_view",
        "flags_view",
        "classification_view",
        "decision_view",
        "agent_note",
        "error_message",
        "context_view",
        "clarification_view",
        "timeline",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "review_buttons",
                    "processing_status",
                    "from_line",
                    "to_line",
                    "subject",
                    "received_at",
                    "processed_at",
                    "agent_note",
                    "error_message",
                )
            },
        ),
        ("Message (rendered as text; hidden content removed)", {"fields": ("body_sanitized",)}),
        ("Original HTML (sandboxed: no scripts, no remote images)", {"fields": ("html_frame",)}),
        ("Attachments", {"fields": ("attachments_view",)}),
        ("Questions for you", {"fields": ("clarification_view",)}),
        ("Analysis", {"fields": ("flags_view", "classification_view", "decision_view", "context_view")}),
        ("Draft", {"fields": ("draft_subject", "draft_response")}),
        ("Step timeline", {"fields": ("timeline",)}),
    )

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is None or obj.processing_status != P.DRAFT_READY:
            fields += ["draft_subject", "draft_response"]
        return fields

    @admin.display(description="actions")
    def review_buttons(self, obj: InboundMessage) -> str:
        buttons = [
            (reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_verb", args=[obj.pk, verb]), label)
            for verb, (_, label, states) in VERBS.items()
            if obj.processing_status in states
        ]
        if not buttons:
            return "—"
        return format_html_join(
            " ",
            '<button type="submit" formaction="{}" formmethod="post" class="button" '
            'style="margin-right:6px;padding:4px 10px;border:1px solid #cbd5e1;border-radius:6px;'
            'font-weight:500">{}</button>',
            buttons,
        )

    def save_model(self, request: HttpRequest, obj: InboundMessage, form: Any, change: bool) -> None:
        """Only the draft is editable, and only through the review service (revision history, audit)."""
        if not change or not {"draft_response", "draft_subject"} & set(form.changed_data):
            return
        outcome = review.message_edit(
            message_id=obj.pk,
            organization_id=obj.organization_id,
            actor=self.actor(request),
            draft_response=form.cleaned_data.get("draft_response") or "",
            draft_subject=form.cleaned_data.get("draft_subject") or None,
        )
        if not outcome.ok:
            messages.error(request, outcome.message)

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/html/",
                self.admin_site.admin_view(self.html_view),
                name="{}_{}_html".format(*info),
            ),
            path(
                "<path:object_id>/verb/<str:verb>/",
                self.admin_site.admin_view(self.verb_view),
                name="{}_{}_verb".format(*info),
            ),
            *self.attachment_urls(),
            *self.retry_urls(),
            *super().get_urls(),
        ]

    def verb_view(self, request: HttpRequest, object_id: Any, verb: str):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = get_object_or_404(self.get_queryset(request), pk=object_id)
        if verb not in VERBS or not self.has_change_permission(request, obj):
            raise PermissionDenied
        fn = VERBS[verb][0]
        kwargs: dict[str, Any] = {
            "message_id": obj.pk,
            "organization_id": obj.organization_id,
            "actor": self.actor(request),
        }
        if verb == "answer":
            kwargs["answers"] = [request.POST.get(f"answer_{i}", "") for i in range(len(questions_of(obj)))]
        if verb == "approve" and request.POST.get("draft_response"):
            kwargs["draft_response"] = request.POST["draft_response"]
            kwargs["draft_subject"] = request.POST.get("draft_subject") or None
        outcome = fn(**kwargs)
        if outcome.ok:
            messages.success(request, _done(VERBS[verb][1], outcome))
        else:
            messages.error(request, outcome.message or outcome.reason)
        return HttpResponseRedirect(self._after_verb(request, obj))

    def _after_verb(self, request: HttpRequest, obj: InboundMessage) -> str:
        """Where a verb returns: a safe `next` (the dashboard, the queue), the message while this screen still
        lists it, else this screen's list (the review queue after approve or reject)."""
        target = request.POST.get("next") or ""
        if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
            return target
        info = self.opts.app_label, self.opts.model_name
        if self.get_queryset(request).filter(pk=obj.pk).exists():
            return reverse("admin:{}_{}_change".format(*info), args=[obj.pk])
        return reverse("admin:{}_{}_changelist".format(*info))

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None):
        return super().changelist_view(request, {**self.retry_notice(request), **(extra_context or {})})


def _done(label: str, outcome: Any) -> str:
    if outcome.to_state == P.APPROVED:
        return f"{label}: approved; the reply is sent after the undo window (Undo send is above the queue)."
    if outcome.from_state == outcome.to_state or outcome.to_state is None:
        return f"{label}: done; the agent picks the message up again."
    return f"{label}: done ({P(outcome.from_state).label} → {P(outcome.to_state).label})."


@admin.register(InboundMessage)
class AllMessagesAdmin(InboundMessageAdmin):
    actions = ("retry_selected",)


@admin.register(ReviewQueueMessage)
class ReviewQueueAdmin(InboundMessageAdmin):
    ordering = ("received_at",)  # the oldest waiting first; `received_at` is our time of receipt

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).filter(processing_status=P.DRAFT_READY)

    def undo_pending(self, request: HttpRequest) -> list[dict[str, Any]]:
        """Approved replies still inside their undo window, with the seconds left and the Undo URL."""
        now, rows = timezone.now(), []
        approved = InboundMessageAdmin.get_queryset(self, request).filter(
            processing_status=P.APPROVED, pending_auto_send__isnull=False
        )
        for m in approved.order_by("-updated_at")[:20]:
            send_at = parse_datetime(str((m.pending_auto_send or {}).get("send_at") or ""))
            if send_at is None or send_at <= now:
                continue
            rows.append(
                {
                    "subject": m.subject or "(no subject)",
                    "seconds": max(1, int((send_at - now).total_seconds())),
                    "url": reverse("admin:inbox_inboundmessage_verb", args=[m.pk, "undo"]),
                }
            )
        return rows

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None):
        return super().changelist_view(
            request, {"undo_pending": self.undo_pending(request), **(extra_context or {})}
        )


@admin.register(QuarantinedMessage)
class QuarantineAdmin(InboundMessageAdmin):
    list_display = ("subject_or_none", "from_email", "injection_type", "phishing", "received_at")

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).filter(processing_status=P.QUARANTINED)

    @admin.display(description="injection")
    def injection_type(self, obj: InboundMessage) -> str:
        return (obj.security_flags or {}).get("injectionType", "—")

    @admin.display(description="phishing", boolean=True)
    def phishing(self, obj: InboundMessage) -> bool:
        return bool((obj.security_flags or {}).get("phishingDetected"))
