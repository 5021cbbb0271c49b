"""Template writes other than status (DOM-13, API-26) and the in-use registry for deletes.

Campaigns and automations register an in-use checker in their `AppConfig.ready()` (the templates layer does
not import them): `register_template_in_use(fn)` with `fn(organization_id, template_id) -> [{"kind", "id"}]`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from owlat.audit import audit_write
from templates.models import EmailTemplate

UsedBy = list[dict[str, str]]
_in_use_checkers: list[Callable[[Any, Any], UsedBy]] = []

EDITABLE = (
    "name",
    "subject",
    "preview_text",
    "content",
    "html_content",
    "plain_text_content",
    "type",
    "default_language",
    "supported_languages",
    "translations",
    "html_translations",
)


# The admin's "send test email" goes through delivery, a higher layer: delivery registers its sender here.
_test_senders: list[Callable[..., Any]] = []


def register_test_sender(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(*, organization_id, to, email_template_id, transactional_email_id, contact_id, language)` → send row."""
    _test_senders[:] = [fn]
    return fn


def template_test_send(**kwargs: Any) -> Any:
    if not _test_senders:
        raise ValueError("No delivery layer is installed to send test emails")
    return _test_senders[0](**kwargs)


def register_template_in_use(fn: Callable[[Any, Any], UsedBy]) -> Callable[[Any, Any], UsedBy]:
    if fn not in _in_use_checkers:
        _in_use_checkers.append(fn)
    return fn


def template_in_use(organization_id: Any, template_id: Any) -> UsedBy:
    used: UsedBy = []
    for checker in _in_use_checkers:
        for item in checker(organization_id, template_id) or []:
            used.append({"kind": str(item["kind"]), "id": str(item["id"])})
    return used


def email_template_create(*, organization_id: Any, actor: str, fields: dict[str, Any]) -> EmailTemplate:
    with transaction.atomic():
        template = EmailTemplate.objects.create(
            organization_id=organization_id, **{k: v for k, v in fields.items() if k in EDITABLE}
        )
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="template.created",
            resource="email_template",
            resource_id=str(template.pk),
            details={"name": template.name},
        )
    return template


def email_template_update(*, template: EmailTemplate, actor: str, changes: dict[str, Any]) -> EmailTemplate:
    changed = [k for k in EDITABLE if k in changes and getattr(template, k) != changes[k]]
    if not changed:
        return template
    with transaction.atomic():
        for key in changed:
            setattr(template, key, changes[key])
        template.save(update_fields=[*changed, "updated_at"])
        audit_write(
            organization_id=template.organization_id,
            actor=actor,
            action="template.updated",
            resource="email_template",
            resource_id=str(template.pk),
            details={"fields": ",".join(changed)},
        )
    return template


def email_template_delete(*, template: EmailTemplate, actor: str) -> None:
    with transaction.atomic():
        template_id = str(template.pk)
        template.delete()
        audit_write(
            organization_id=template.organization_id,
            actor=actor,
            action="template.deleted",
            resource="email_template",
            resource_id=template_id,
            details={},
        )
