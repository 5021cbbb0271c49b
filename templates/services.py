"""Template writes other than status (DOM-13, API-26).

Campaigns and automations register an in-use checker in their `AppConfig.ready()` (the templates layer does
not import them): `register_template_in_use(fn)` with `fn(organization_id, template_id) -> [{"kind", "id"}]`
(the kernel's in-use registries, `owlat.inuse`, re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from owlat.audit import audit_write
from owlat.inuse import register_template_in_use, template_in_use  # noqa: F401  (re-exported)
from templates.content import RENDER_INPUTS, content_render
from templates.models import EmailTemplate

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


# The real unsubscribe and preference links of a contact are delivery's (signed tokens): it registers a maker.
_link_makers: list[Callable[..., dict[str, str]]] = []


def register_recipient_links(fn: Callable[..., dict[str, str]]) -> Callable[..., dict[str, str]]:
    """`fn(*, organization_id, contact_id) -> {"unsubscribeUrl": …, "preferencesUrl": …}`."""
    _link_makers[:] = [fn]
    return fn


def recipient_links(*, organization_id: Any, contact_id: Any) -> dict[str, str]:
    """A contact's working unsubscribe and preference links ({} without a contact or a delivery layer)."""
    if contact_id is None or not _link_makers:
        return {}
    return _link_makers[0](organization_id=organization_id, contact_id=contact_id)


def email_template_create(*, organization_id: Any, actor: str, fields: dict[str, Any]) -> EmailTemplate:
    with transaction.atomic():
        template = EmailTemplate(
            organization_id=organization_id, **{k: v for k, v in fields.items() if k in EDITABLE}
        )
        content_render(template)
        template.save(force_insert=True)
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
        if RENDER_INPUTS.intersection(changed):
            changed = list(dict.fromkeys([*changed, *content_render(template)]))
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
