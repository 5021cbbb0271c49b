"""The block editor in the template admin: the form fields it writes (`content`, the language texts), its widget
and configuration, and the live preview it frames (block_editor.js).

The document is validated on save like the API validates it (templates.blocks): an error names the block and
field. The live preview is a sandboxed document (owlat.sandbox: tenant HTML never runs on the app's origin),
framed by the editor with the same sandbox flags.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, json_script

from owlat.forms.languages import language_name
from owlat.sandbox import SANDBOX_FLAGS, sandboxed_response
from templates.block_render import render_document
from templates.block_translations import overrides_clean
from templates.blocks import (
    FONT_FAMILIES,
    TRANSLATABLE,
    BlockError,
    document_clean,
    html_document,
    is_block_document,
)
from templates.layouts import LAYOUTS

VARIABLES = [
    {"name": "firstName", "label": "First name", "fallback": "there"},
    {"name": "lastName", "label": "Last name", "fallback": ""},
    {"name": "email", "label": "Email address", "fallback": ""},
    {"name": "unsubscribeUrl", "label": "Unsubscribe link", "fallback": ""},
    {"name": "preferencesUrl", "label": "Preference centre link", "fallback": ""},
    {"name": "viewInBrowserUrl", "label": "View in browser link (campaigns)", "fallback": ""},
]


class BlockEditorWidget(forms.Widget):
    """A hidden input holding the document, and the editor that edits it (configured by `editor_config`)."""

    template_name = "admin/templates/block_editor_widget.html"

    class Media:
        js = ("editor/trix.umd.min.js", "editor/Sortable.min.js", "templates/block_editor.js")
        css = {"all": ("editor/trix.css", "templates/block_editor.css")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.editor_config: dict[str, Any] = {}

    def format_value(self, value: Any) -> str:
        if value in (None, "", "null"):
            return ""
        return value if isinstance(value, str) else json.dumps(value)

    def get_context(self, name: str, value: Any, attrs: Any) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        config_id = f"{context['widget']['attrs'].get('id', name)}-config"
        context["config_script"] = json_script(self.editor_config, config_id)
        context["config_id"] = config_id
        return context


@functools.cache
def _starter_layouts() -> dict[str, Any]:
    """The starter layouts as the editor shows them: every setting filled in (its pickers show the defaults)."""
    return {key: {**layout, "content": document_clean(layout["content"])} for key, layout in LAYOUTS.items()}


def editor_config(*, template: Any, languages: list[str], content: Any, translations: Any) -> dict[str, Any]:
    default = getattr(template, "default_language", None) or "en"
    try:
        preview = reverse("admin:templates_emailtemplate_editor_preview")
        library = reverse("admin:templates_templateimage_library")
        upload = reverse("admin:templates_templateimage_library_upload")
    except NoReverseMatch:  # pragma: no cover - the admin is always mounted
        preview = library = upload = ""
    langs = [default, *[lang for lang in languages if lang != default]]
    return {
        "content": content if is_block_document(content) else None,
        "translations": translations if isinstance(translations, dict) else {},
        "defaultLanguage": default,
        "languages": [[lang, f"{language_name(lang)} ({lang})"] for lang in langs],
        "layouts": _starter_layouts(),
        "translatable": TRANSLATABLE,
        "fonts": list(FONT_FAMILIES),
        "variables": VARIABLES,
        "previewUrl": preview,
        "libraryUrl": library,
        "uploadUrl": upload,
        "sandboxFlags": SANDBOX_FLAGS,
    }


class BlockContentFormMixin(forms.ModelForm):
    """`content` (the block document) and `block_translations` (its texts per language) of the template form;
    `convert_to_blocks` turns an HTML template into one raw block."""

    content = forms.JSONField(required=False, widget=BlockEditorWidget, label="Blocks")
    block_translations = forms.JSONField(required=False, widget=forms.HiddenInput)
    convert_to_blocks = forms.BooleanField(
        required=False,
        label="Convert to blocks",
        help_text="The HTML becomes one raw block of the block editor, sent as written; add blocks around it.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        widget = self.fields["content"].widget
        widget.attrs["id"] = "id_content"
        self.fields["block_translations"].widget.attrs["id"] = "id_block_translations"
        if not self.is_bound:
            self.initial["block_translations"] = json.dumps(self.instance.translations or {})
        widget.editor_config = editor_config(
            template=self.instance,
            languages=list(self.languages) + list(self.instance.supported_languages or []),
            content=self.instance.content,
            translations=self.instance.translations if is_block_document(self.instance.content) else {},
        )

    def clean_content(self) -> Any:
        value = self.cleaned_data.get("content")
        if value in (None, "", {}):
            return self.instance.content if not is_block_document(self.instance.content) else None
        try:
            return document_clean(value, root="content")
        except BlockError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("convert_to_blocks") and not is_block_document(cleaned.get("content")):
            cleaned["content"] = document_clean(html_document(cleaned.get("html_content") or ""))
        document = cleaned.get("content")
        if is_block_document(document):
            try:
                cleaned["translations"] = overrides_clean(cleaned.get("block_translations"), document)
            except BlockError as exc:
                self.add_error("content", exc.message)
        return cleaned

    def save(self, commit: bool = True) -> Any:
        template = super().save(commit=False)
        if is_block_document(self.cleaned_data.get("content")):
            from templates.content import content_render

            template.translations = self.cleaned_data.get("translations") or {}
            content_render(template)
        if commit:
            template.save()
            self._save_m2m()
        return template


def editor_preview_response(request: HttpRequest) -> HttpResponse:
    """The live preview: POSTed `content` and `translations` rendered for `language` with sample data."""
    try:
        document = document_clean(json.loads(request.POST.get("content") or "null"))
        texts = json.loads(request.POST.get("translations") or "{}")
        language = request.POST.get("language") or "en"
        overrides = overrides_clean(texts, document).get(language)
    except (BlockError, ValueError) as exc:
        message = exc.message if isinstance(exc, BlockError) else "The document is not valid JSON."
        return sandboxed_response(
            format_html(
                '<p style="font:14px sans-serif;color:#b91c1c;padding:16px">Not shown yet: {}</p>', message
            )
        )
    from templates.rendering import compile_text

    rendered = render_document(document, overrides=overrides, language=language)
    sample = {"firstName": "", "lastName": "", "email": "", "unsubscribeUrl": "#", "preferencesUrl": "#"}
    sample["postalAddress"] = "Your organization's postal address"
    return sandboxed_response(compile_text(rendered.html).render(sample, escape=True))
