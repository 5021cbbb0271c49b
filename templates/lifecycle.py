"""The single writer of template `status` (DOM-13, API-26): publish and unpublish.

Built on the shared runner (`owlat.lifecycle`, D-04): lock, guard, fsm transition, save, audit row.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from owlat.lifecycle import Audit, Decision, Lifecycle, Outcome
from templates.models import EmailTemplate, TemplateStatus, TransactionalEmail, TransactionalStatus


class EmailTemplateLifecycle(Lifecycle):
    model = EmailTemplate
    resource = "email_template"
    not_found_reason = "template_not_found"
    messages = {
        "template_not_found": "Template not found",
        "template_no_content": "Template has no HTML content. Add HTML content before publishing.",
        "illegal_edge": "Illegal template status change",
    }

    def self_loop_audit_action(self, state: str) -> str | None:
        return "template.published" if state == TemplateStatus.PUBLISHED else "template.unpublished"

    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        if (frm, to) not in {("draft", "published"), ("published", "draft")}:
            return Decision.refuse("illegal_edge")
        if to == TemplateStatus.PUBLISHED:
            if not (obj.html_content or "").strip():
                return Decision.refuse("template_no_content")
            return Decision.accept({"status": to}, [Audit("template.published", {"previousStatus": frm})])
        return Decision.accept({"status": to}, [Audit("template.unpublished", {"previousStatus": frm})])


class TransactionalEmailLifecycle(Lifecycle):
    model = TransactionalEmail
    resource = "transactional_email"
    not_found_reason = "template_not_found"
    messages = {
        "template_not_found": "Transactional email not found",
        "illegal_edge": "Illegal transactional email status change",
    }
    _edges = {
        (TransactionalStatus.DRAFT, TransactionalStatus.PUBLISHED): "transactional_email.published",
        (TransactionalStatus.PENDING_REVIEW, TransactionalStatus.PUBLISHED): "transactional_email.published",
        (TransactionalStatus.PUBLISHED, TransactionalStatus.DRAFT): "transactional_email.unpublished",
        (TransactionalStatus.PENDING_REVIEW, TransactionalStatus.DRAFT): "transactional_email.unpublished",
        (TransactionalStatus.DRAFT, TransactionalStatus.PENDING_REVIEW): "transactional_email.submitted",
    }

    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        action = self._edges.get((frm, to))
        if action is None:
            return Decision.refuse("illegal_edge")
        return Decision.accept({"status": to}, [Audit(action, {"previousStatus": frm, "newStatus": to})])


def email_template_set_status(
    *, template_id: Any, to: str, actor: str, organization_id: Any = None
) -> Outcome:
    return EmailTemplateLifecycle().transition(template_id, to, actor=actor, organization_id=organization_id)


def transactional_email_set_status(
    *, transactional_email_id: Any, to: str, actor: str, organization_id: Any = None
) -> Outcome:
    return TransactionalEmailLifecycle().transition(
        transactional_email_id, to, actor=actor, organization_id=organization_id
    )
