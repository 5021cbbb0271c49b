"""How an inbound message shows on its admin page: escaped text, the HTML only in a sandboxed frame (no scripts,
no remote content, not for quarantined mail), addresses as addresses and the analysis as labelled pairs — never
JSON, field names or spec ids."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html, format_html_join, linebreaks
from django.utils.safestring import mark_safe

from inbox.clarification import questions_of
from inbox.models import AgentAction, InboundMessage
from inbox.models import ProcessingStatus as P
from inbox.security import html_to_visible_text, strip_invisible_chars
from owlat.sandbox import sandboxed_frame, sandboxed_response

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_")
_CODE = re.compile(r"[a-z0-9]+(_[a-z0-9]+)+")


def label(key: str) -> str:
    """`injectionType` / `context_tier` → "Injection type" / "Context tier"."""
    words = _WORD.sub(" ", str(key)).lower().strip()
    return words[:1].upper() + words[1:]


def plain(value: Any) -> str:
    """A stored value as an operator reads it: yes/no, comma-joined lists, nested pairs flattened."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or value == "" or value == [] or value == {}:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{label(k).lower()}: {plain(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, str) and _CODE.fullmatch(value):
        return value.replace("_", " ")  # a stored code (`first_contact`) as words
    return str(value)


def pairs(data: dict[str, Any] | None) -> str:
    if not data:
        return "—"
    return format_html(
        "<dl style='display:grid;grid-template-columns:max-content auto;gap:2px 12px'>{}</dl>",
        format_html_join(
            "", "<dt><b>{}</b></dt><dd>{}</dd>", ((label(k), plain(v)) for k, v in data.items())
        ),
    )


class MessageDisplayMixin:
    """For `InboundMessageAdmin`: its read-only fields and the sandboxed HTML view."""

    # provided by the ModelAdmin it is mixed into
    opts: Any
    get_queryset: Any
    has_view_permission: Any

    @admin.display(description="subject")
    def subject_or_none(self, obj: InboundMessage) -> str:
        return obj.subject or "(no subject)"

    @admin.display(description="category")
    def category(self, obj: InboundMessage) -> str:
        return (obj.classification or {}).get("category", "—")

    @admin.display(description="to")
    def to_line(self, obj: InboundMessage) -> str:
        """The recipients as addresses (the stored list is no operator's reading)."""
        return ", ".join(str(a) for a in (obj.to or [])) or "—"

    @admin.display(description="from")
    def from_line(self, obj: InboundMessage) -> str:
        return f"{obj.from_name} <{obj.from_email}>" if obj.from_name else obj.from_email

    @admin.display(description="body")
    def body_sanitized(self, obj: InboundMessage) -> str:
        text = strip_invisible_chars(obj.text_body or "") or html_to_visible_text(obj.html_body or "")
        # escaped by `linebreaks` itself; only its own <p>/<br> are markup (unmarked, the admin showed them as text)
        return mark_safe(linebreaks(text or "(empty)", autoescape=True))

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
        return pairs(obj.security_flags)

    @admin.display(description="classification")
    def classification_view(self, obj: InboundMessage) -> str:
        return pairs(obj.classification)

    @admin.display(description="agent decision")
    def decision_view(self, obj: InboundMessage) -> str:
        return pairs(obj.agent_decision)

    @admin.display(description="context")
    def context_view(self, obj: InboundMessage) -> str:
        data = dict(obj.context_coverage or {})
        if obj.context_tier:
            data["tier"] = obj.context_tier
        return pairs(data)

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
                    a.get_action_type_display(),
                    a.get_status_display(),
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
