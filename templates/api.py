"""Templates API (API-26): `GET|POST /templates`, `GET|PUT|PATCH|DELETE /templates/{id}`,
`POST /templates/{id}/publish` and `/unpublish`. Thin views over `templates.services` and `templates.lifecycle`."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema

from owlat.api.base import iso, outcome_error, require_uuid, transition_object
from owlat.api.errors import ApiError, invalid_input, not_found
from owlat.api.legacy import LegacyApiView as ApiView
from templates.lifecycle import email_template_set_status
from templates.models import EmailTemplate, TemplateStatus, TemplateType
from templates.services import (
    email_template_create,
    email_template_delete,
    email_template_update,
    template_in_use,
)

LANGUAGE_RE = re.compile(r"^[a-z]{2}(-[a-z]{2,3})?$", re.IGNORECASE)
HEAVY = ("htmlContent", "plainTextContent", "content", "translations", "htmlTranslations")
READ_ONLY = ("id", "status", "createdAt", "updatedAt")
# wire key → (model field, kind)
FIELDS: dict[str, tuple[str, str]] = {
    "name": ("name", "string"),
    "subject": ("subject", "string"),
    "previewText": ("preview_text", "string"),
    "htmlContent": ("html_content", "string"),
    "plainTextContent": ("plain_text_content", "string"),
    "content": ("content", "any"),
    "type": ("type", "type"),
    "defaultLanguage": ("default_language", "language"),
    "supportedLanguages": ("supported_languages", "languages"),
    "translations": ("translations", "object"),
    "htmlTranslations": ("html_translations", "html_translations"),
}
MAX_LENGTHS = {"name": 200, "subject": 998, "previewText": 500}


def template_data(t: EmailTemplate, *, full: bool = True) -> dict[str, Any]:
    data = {
        "id": str(t.pk),
        "name": t.name,
        "subject": t.subject,
        "previewText": t.preview_text,
        "type": t.type,
        "status": t.status,
        "htmlContent": t.html_content,
        "plainTextContent": t.plain_text_content,
        "content": t.content,
        "defaultLanguage": t.default_language,
        "supportedLanguages": t.supported_languages or [],
        "translations": t.translations or {},
        "htmlTranslations": t.html_translations or {},
        "createdAt": iso(t.created_at),
        "updatedAt": iso(t.updated_at),
    }
    if not full:
        for key in HEAVY:
            data.pop(key)
    return data


def parse_fields(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    for key in READ_ONLY:
        if key in body:
            raise invalid_input(f"{key} is read-only", field=key)
    out: dict[str, Any] = {}
    for key, (field, kind) in FIELDS.items():
        if key not in body:
            continue
        value = body[key]
        if kind == "string":
            if not isinstance(value, str):
                raise invalid_input(f"{key} must be a string", field=key)
            if key in MAX_LENGTHS and len(value) > MAX_LENGTHS[key]:
                raise invalid_input(f"{key} must be at most {MAX_LENGTHS[key]} characters", field=key)
        elif kind == "type":
            if value not in TemplateType.values:
                raise invalid_input(f"type must be one of {', '.join(TemplateType.values)}", field=key)
        elif kind == "language":
            if not isinstance(value, str) or not LANGUAGE_RE.match(value):
                raise invalid_input(f"{key} must be a valid language code", field=key)
        elif kind == "languages":
            if not isinstance(value, list) or not all(
                isinstance(v, str) and LANGUAGE_RE.match(v) for v in value
            ):
                raise invalid_input(f"{key} must be an array of language codes", field=key)
        elif kind == "object":
            if not isinstance(value, dict):
                raise invalid_input(f"{key} must be an object", field=key)
        elif kind == "html_translations" and (
            not isinstance(value, dict)
            or not all(
                isinstance(v, dict)
                and all(isinstance(v.get(k), str) for k in ("htmlContent", "subject") if k in v)
                for v in value.values()
            )
        ):
            raise invalid_input(
                "htmlTranslations must map languages to {htmlContent, subject} strings", field=key
            )
        out[field] = value
    if creating:
        for key in ("name", "subject"):
            value = body.get(key)
            if not isinstance(value, str) or not value.strip():
                raise invalid_input(f"{key} is required", field=key)
    elif "name" in out and not out["name"].strip():
        raise invalid_input("name is required", field="name")
    return out


class TemplateListView(ApiView):
    scopes = {"GET": "templates:read", "POST": "templates:write"}

    @extend_schema(summary="List email templates", responses={200: dict})
    def get(self, request):
        qs = EmailTemplate.objects.filter(organization_id=self.organization_id)
        for name, field, allowed in (
            ("status", "status", TemplateStatus.values),
            ("type", "type", TemplateType.values),
        ):
            raw = self.query(name)
            if raw:
                values = [v.strip() for v in raw.split(",") if v.strip()]
                if any(v not in allowed for v in values):
                    raise invalid_input(f"Invalid {name} filter", field=name)
                qs = qs.filter(**{f"{field}__in": values})
        term = self.search_term()
        if term:
            qs = qs.filter(name__icontains=term)
        return self.paginated(qs, lambda t: template_data(t, full=False))

    @extend_schema(summary="Create an email template", responses={201: dict})
    def post(self, request):
        fields = parse_fields(self.body(), creating=True)
        template = email_template_create(
            organization_id=self.organization_id, actor=self.actor, fields=fields
        )
        return self.created(template_data(template))


class TemplateDetailView(ApiView):
    scopes = {
        "GET": "templates:read",
        "PUT": "templates:write",
        "PATCH": "templates:write",
        "DELETE": "templates:write",
    }

    def _get(self, template_id: str) -> EmailTemplate:
        pk = require_uuid(template_id, "template")
        template = EmailTemplate.objects.filter(pk=pk, organization_id=self.organization_id).first()
        if template is None:
            raise not_found("Template not found")
        return template

    def get(self, request, template_id: str):
        return self.ok(template_data(self._get(template_id)))

    def put(self, request, template_id: str):
        template = self._get(template_id)
        changes = parse_fields(self.body(), creating=False)
        return self.ok(
            template_data(email_template_update(template=template, actor=self.actor, changes=changes))
        )

    patch = put

    def delete(self, request, template_id: str):
        template = self._get(template_id)
        used = template_in_use(self.organization_id, template.pk)
        if used:
            raise ApiError(
                "invalid_state",
                "Template is in use and cannot be deleted",
                {"reason": "template_in_use", "usedBy": used},
            )
        email_template_delete(template=template, actor=self.actor)
        return self.deleted(template_id)


class TemplateTransitionView(ApiView):
    required_scope = "templates:write"
    target: str = ""

    def post(self, request, template_id: str):
        pk = require_uuid(template_id, "template")
        outcome = email_template_set_status(
            template_id=pk, to=self.target, actor=self.actor, organization_id=self.organization_id
        )
        if not outcome.ok:
            error = outcome_error(outcome)
            if outcome.reason == "template_not_found":
                error = not_found("Template not found")
            raise error
        template = EmailTemplate.objects.get(pk=pk)
        return self.ok(template_data(template), transition=transition_object(outcome))


class TemplatePublishView(TemplateTransitionView):
    target = TemplateStatus.PUBLISHED


class TemplateUnpublishView(TemplateTransitionView):
    target = TemplateStatus.DRAFT
