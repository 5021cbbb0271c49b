"""Confirmation and one-form pages of the admin, in the admin's own frame and the theme's styles: an irreversible
action is asked for with GET, which shows what will happen (the consequences, the figures) with Confirm and Back;
only the POST of that page (with its CSRF token) acts. Shared by the engines' admins."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.http import HttpRequest
from django.template.response import TemplateResponse


@dataclass(frozen=True)
class Confirmation:
    """What a confirmation page says: `consequences` are sentences, `facts` label/value rows; with `blocked`
    (why the action cannot run now) the Confirm button is not offered."""

    title: str
    label: str
    consequences: list[str]
    facts: list[tuple[str, Any]] = field(default_factory=list)
    danger: bool = False
    blocked: str | None = None


def _object(obj: Any) -> dict[str, Any]:
    """`heading` for the page; `object` (read by the theme's breadcrumbs) only for a model instance."""
    return {"heading": str(obj), **({"object": obj} if hasattr(obj, "_meta") else {})}


def confirmation_page(
    model_admin: Any,
    request: HttpRequest,
    obj: Any,
    confirmation: Confirmation,
    *,
    action_url: str,
    back_url: str,
    hidden: list[tuple[str, Any]] | None = None,
) -> TemplateResponse:
    """`hidden`: (name, value) pairs the confirming POST carries (an admin action's selection, for one)."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": confirmation.title,
        "subtitle": str(obj),
        **_object(obj),
        "confirmation": confirmation,
        "action_url": action_url,
        "back_url": back_url,
        "hidden": hidden or [],
        "opts": model_admin.model._meta,
    }
    return TemplateResponse(request, "admin/owlat/confirm_action.html", context)


def form_page(
    model_admin: Any,
    request: HttpRequest,
    obj: Any,
    *,
    title: str,
    form: forms.Form,
    submit: str,
    back_url: str,
    intro: list[str] | None = None,
    datalists: dict[str, list[str]] | None = None,
) -> TemplateResponse:
    """A page with one form about `obj` (schedule, test send, reject), its fields rendered as the change form's;
    `datalists` are suggestion lists (id → values) a text input names with its `list` attribute."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "subtitle": str(obj),
        **_object(obj),
        "form": form,
        "submit_label": submit,
        "back_url": back_url,
        "intro": intro or [],
        "datalists": datalists or {},
        "opts": model_admin.model._meta,
    }
    return TemplateResponse(request, "admin/owlat/form_page.html", context)
