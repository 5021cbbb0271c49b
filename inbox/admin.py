"""Admin screens of the inbox (D-12): review queue, quarantine, all messages with the per-step timeline, agent
configuration per organization (a form, no JSON), knowledge entries.

Messages are read-only except the draft (saved through `inbox.review.message_edit`); every status change is a
button calling `inbox.review`, which goes through the lifecycle. The sender's HTML is never part of the page: the
body shown is the visible text (hidden content stripped), escaped; the original HTML is only shown in a frame of
its own, a sandboxed document without remote content (owlat.sandbox), and not for quarantined mail.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join, linebreaks

from inbox import review
from inbox.admin_attachments import AttachmentsAdminMixin
from inbox.clarification import message_clarify, questions_of
from inbox.configuration import AGENT_CONFIG_FIELDS, agent_config_errors, agent_config_update
from inbox.models import (
    AgentAction,
    AgentConfig,
    InboundMessage,
    KnowledgeEntry,
    ProcessingStatus,
    QuarantinedMessage,
    ReviewQueueMessage,
)
from inbox.security import html_to_visible_text, strip_invisible_chars
from owlat.admin_tenancy import TenantModelAdmin
from owlat.sandbox import sandboxed_frame, sandboxed_response

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
    "retry": (review.message_retry, "Retry", (P.FAILED,)),
    "undo": (review.pending_send_cancel, "Undo send", (P.APPROVED,)),
    "block-sender": (review.message_block_sender, "Block sender", (P.DRAFT_READY, P.QUARANTINED, P.RECEIVED)),
    "answer": (message_clarify, "Answer and draft", (P.AWAITING_CLARIFICATION,)),
}


def _pairs(data: dict[str, Any] | None) -> str:
    if not data:
        return "—"
    return format_html(
        "<dl style='display:grid;grid-template-columns:max-content auto;gap:2px 12px'>{}</dl>",
        format_html_join("", "<dt><b>{}</b></dt><dd>{}</dd>", ((k, str(v)) for k, v in data.items())),
    )


class DraftForm(forms.ModelForm):
    class Meta:
        model = InboundMessage
        fields = ("draft_subject", "draft_response")
        widgets = {"draft_response": forms.Textarea(attrs={"rows": 12, "cols": 90})}


class InboundMessageAdmin(AttachmentsAdminMixin, TenantModelAdmin):
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
        "to",
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
                    "to",
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
        ("Questions for you (AGT-18)", {"fields": ("clarification_view",)}),
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

    @admin.display(description="subject")
    def subject_or_none(self, obj: InboundMessage) -> str:
        return obj.subject or "(no subject)"

    @admin.display(description="category")
    def category(self, obj: InboundMessage) -> str:
        return (obj.classification or {}).get("category", "—")

    @admin.display(description="from")
    def from_line(self, obj: InboundMessage) -> str:
        return f"{obj.from_name} <{obj.from_email}>" if obj.from_name else obj.from_email

    @admin.display(description="body")
    def body_sanitized(self, obj: InboundMessage) -> str:
        text = strip_invisible_chars(obj.text_body or "") or html_to_visible_text(obj.html_body or "")
        return linebreaks(text or "(empty)", autoescape=True)

    @admin.display(description="HTML")
    def html_frame(self, obj: InboundMessage) -> str:
        if not obj.html_body:
            return "— (the message has no HTML part)"
        if obj.processing_status == P.QUARANTINED:
            return "— (not shown for quarantined mail: read the text above)"
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_html", args=[obj.pk])
        return sandboxed_frame(url, title="The message's original HTML", height=420)

    def html_view(self, request: HttpRequest, object_id: Any) -> HttpResponse:
        """The message's HTML part as a sandboxed document without remote content, for the frame above."""
        obj = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_permission(request, obj) or obj.processing_status == P.QUARANTINED:
            raise PermissionDenied
        return sandboxed_response(obj.html_body or "", remote_content=False)

    @admin.display(description="security flags")
    def flags_view(self, obj: InboundMessage) -> str:
        return _pairs(obj.security_flags)

    @admin.display(description="classification")
    def classification_view(self, obj: InboundMessage) -> str:
        return _pairs(obj.classification)

    @admin.display(description="agent decision")
    def decision_view(self, obj: InboundMessage) -> str:
        return _pairs(obj.agent_decision)

    @admin.display(description="context")
    def context_view(self, obj: InboundMessage) -> str:
        data = dict(obj.context_coverage or {})
        if obj.context_tier:
            data["tier"] = obj.context_tier
        return _pairs(data)

    @admin.display(description="questions")
    def clarification_view(self, obj: InboundMessage) -> str:
        questions = questions_of(obj)
        if not questions:
            return "—"
        answers = (obj.draft_options or {}).get("answers") or []
        if obj.processing_status != P.AWAITING_CLARIFICATION:
            return format_html_join(
                "",
                "<p><b>{}</b><br>{}</p>",
                (
                    (q.get("question"), answers[i] if i < len(answers) else "(not answered)")
                    for i, q in enumerate(questions)
                ),
            )
        return format_html_join(
            "",
            '<p><label for="answer_{0}"><b>{1}</b></label><br><small>The agent considered: {2}</small><br>'
            '<input type="text" id="answer_{0}" name="answer_{0}" size="80" required></p>',
            ((i, q.get("question"), ", ".join(q.get("candidates") or [])) for i, q in enumerate(questions)),
        ) + format_html("<p>{}</p>", "Answer every question, then press “Answer and draft”.")

    @admin.display(description="steps")
    def timeline(self, obj: InboundMessage) -> str:
        rows = AgentAction.objects.filter(inbound_message=obj, organization_id=obj.organization_id).order_by(
            "created_at"
        )
        if not rows:
            return "—"
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    a.action_type,
                    a.status,
                    a.started_at or "—",
                    a.duration_ms if a.duration_ms is not None else "—",
                    a.model_used or "—",
                    (a.token_usage or {}).get("totalTokens", "—"),
                    a.retry_count,
                    a.error_message or "",
                )
                for a in rows
            ),
        )
        return format_html(
            "<table><tr><th>step</th><th>status</th><th>started</th><th>ms</th><th>model</th><th>tokens</th>"
            "<th>retries</th><th>error</th></tr>{}</table>",
            body,
        )

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
            'style="margin-right:6px">{}</button>',
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
            messages.success(request, f"{VERBS[verb][1]}: done ({outcome.from_state} → {outcome.to_state}).")
        else:
            messages.error(request, outcome.message or outcome.reason)
        return HttpResponseRedirect(
            reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk])
        )


@admin.register(InboundMessage)
class AllMessagesAdmin(InboundMessageAdmin):
    pass


@admin.register(ReviewQueueMessage)
class ReviewQueueAdmin(InboundMessageAdmin):
    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).filter(processing_status=P.DRAFT_READY)


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

    @admin.display(description="circuit breakers (AGT-20)")
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


from inbox import admin_breakers, admin_imap, admin_provider, admin_rules  # noqa: E402,F401 - their screens
