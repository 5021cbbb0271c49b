"""The template admin's form (DOM-13): a language picker instead of JSON, one subject + HTML pair per translated
language, and the editor JSON (`content`, `translations`) shown read-only.

`html_translations` ({lang: {htmlContent, subject}}) is what rendering reads (templates.rendering): the form edits
it through `translation_<lang>_subject` / `translation_<lang>_html` fields, one pair per selected language besides
the default. The fields of a newly picked language appear after "Save and continue editing"; a language whose
translation still has content cannot be dropped until that content is cleared (no silent data loss).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.html import format_html

from owlat.api.serializers import LANGUAGE_RE
from owlat.forms.languages import language_choices, language_name

SUBJECT = "subject"
HTML = "html"


def stored_languages(template: Any) -> list[str]:
    """Languages the template is written in besides the default: supported ones and those with a translation."""
    if template is None:
        return []
    default = template.default_language or "en"
    langs = [*(template.supported_languages or []), *(template.html_translations or {}).keys()]
    return [lang for lang in dict.fromkeys(langs) if lang and lang != default]


def translation_field(lang: str, part: str) -> str:
    return f"translation_{lang}_{part}"


def translation_fields(lang: str) -> dict[str, forms.Field]:
    from unfold.widgets import UnfoldAdminTextareaWidget, UnfoldAdminTextInputWidget

    name = language_name(lang)
    return {
        translation_field(lang, SUBJECT): forms.CharField(
            label=f"{name} subject",
            required=False,
            max_length=998,
            widget=UnfoldAdminTextInputWidget(),
            help_text=f"Leave empty to send the default subject to {name}-speaking contacts.",
        ),
        translation_field(lang, HTML): forms.CharField(
            label=f"{name} HTML",
            required=False,
            widget=UnfoldAdminTextareaWidget(attrs={"rows": 8}),
            help_text=(
                f"The {name} body; the same {{{{firstName}}}} variables work. Contacts whose language is {lang} get "
                "this version; while it is empty they get the default language."
            ),
        ),
    }


def pretty_json(value: Any) -> str:
    """Read-only display of stored JSON (the editor's document, text overrides)."""
    if value in (None, "", {}, []):
        return "—"
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return format_html('<pre class="whitespace-pre-wrap text-xs max-h-96 overflow-auto">{}</pre>', text)


class TemplateLanguagesForm(forms.ModelForm):
    """Base form of both template admins; the admin subclasses it with the per-language fields (`languages`)."""

    languages: tuple[str, ...] = ()

    default_language = forms.ChoiceField(
        choices=(),
        help_text="The language of the subject and HTML above. Contacts whose language has no translation get it.",
    )
    supported_languages = forms.MultipleChoiceField(
        choices=(),
        required=False,
        label="Other languages",
        help_text=(
            "Languages this template is also written in. Pick one (type to search), click “Save and continue "
            "editing”, then fill in its subject and HTML in its Translation section below."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = [self.instance.default_language or "en", *stored_languages(self.instance), *self.languages]
        choices = language_choices(stored)
        self.fields["default_language"].choices = choices
        self.fields["default_language"].initial = self.instance.default_language or "en"
        for name, label, help_text in (
            ("html_content", "HTML", None),
            (
                "plain_text_content",
                "Plain text",
                "Leave empty to send a plain-text version derived from the HTML.",
            ),
            ("preview_text", None, "The line inbox apps show after the subject."),
        ):
            if name in self.fields:
                self.fields[name].label = label or self.fields[name].label
                self.fields[name].help_text = help_text or self.fields[name].help_text
        self.fields["supported_languages"].choices = choices
        from unfold.widgets import UnfoldAdminSelect2MultipleWidget, UnfoldAdminSelect2Widget

        self.fields["default_language"].widget = UnfoldAdminSelect2Widget(choices=choices)
        self.fields["supported_languages"].widget = UnfoldAdminSelect2MultipleWidget(choices=choices)
        if not self.is_bound:
            self.initial["supported_languages"] = stored_languages(self.instance)
            for lang in self.languages:
                entry = (self.instance.html_translations or {}).get(lang) or {}
                self.initial[translation_field(lang, SUBJECT)] = entry.get("subject", "")
                self.initial[translation_field(lang, HTML)] = entry.get("htmlContent", "")

    def block_mode(self) -> bool:
        """Whether the content is a block document (each language's HTML is rendered from its block texts)."""
        from templates.blocks import is_block_document

        return is_block_document(getattr(self, "cleaned_data", {}).get("content", None)) or (
            "content" not in getattr(self, "cleaned_data", {})
            and is_block_document(getattr(self.instance, "content", None))
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        default = cleaned.get("default_language") or self.instance.default_language or "en"
        picked = [lang for lang in cleaned.get("supported_languages") or [] if lang != default]
        for lang in self.languages:
            subject = (cleaned.get(translation_field(lang, SUBJECT)) or "").strip()
            html = (cleaned.get(translation_field(lang, HTML)) or "").strip()
            name = language_name(lang)
            if lang == default:
                if subject or html:
                    self.add_error(
                        "default_language",
                        f"{name} is now the default language but still has a translation below: move its subject "
                        f"and HTML into the main fields and clear the {name} translation, or choose another "
                        "default language.",
                    )
                continue
            if lang not in picked and (subject or html):
                self.add_error(
                    "supported_languages",
                    f"{name} still has a translated subject or HTML: clear both {name} fields to remove the "
                    f"language, or keep {name} selected.",
                )
            elif subject and not html and not self.block_mode():
                self.add_error(
                    translation_field(lang, HTML),
                    f"Add the {name} HTML, or clear the {name} subject: a translation is only sent when it has "
                    "HTML.",
                )
        cleaned["supported_languages"] = picked
        return cleaned

    def save(self, commit: bool = True) -> Any:
        template = super().save(commit=False)
        default = self.cleaned_data.get("default_language") or template.default_language
        picked = self.cleaned_data.get("supported_languages") or []
        translations = {
            lang: dict(entry)
            for lang, entry in (template.html_translations or {}).items()
            if isinstance(entry, dict) and lang not in self.languages
        }
        for lang in self.languages:
            if lang == default or lang not in picked:
                continue
            entry = dict((self.instance.html_translations or {}).get(lang) or {})
            subject = (self.cleaned_data.get(translation_field(lang, SUBJECT)) or "").strip()
            html = self.cleaned_data.get(translation_field(lang, HTML)) or ""
            entry.update({"subject": subject, "htmlContent": html})
            if not subject:
                entry.pop("subject")
            if self.block_mode():
                entry.pop("htmlContent")  # rendered from the language's block texts (templates.content)
            if html.strip() or (subject and self.block_mode()):
                translations[lang] = entry
        template.supported_languages = [default, *picked] if picked else []
        template.html_translations = translations
        if commit:
            template.save()
            self._save_m2m()
        return template


def form_with_languages(base: type[forms.ModelForm], languages: list[str]) -> type[forms.ModelForm]:
    """`base` plus a subject and an HTML field for each of `languages`."""
    attrs: dict[str, Any] = {"languages": tuple(languages)}
    for lang in languages:
        attrs.update(translation_fields(lang))
    return type(base.__name__, (base,), attrs)


def requested_languages(data: Any, template: Any) -> list[str]:
    """The languages whose translation fields a form shows: stored ones, plus those picked in a submitted form."""
    langs = stored_languages(template)
    if data is not None and hasattr(data, "getlist"):
        default = data.get("default_language") or (template.default_language if template else "en")
        for lang in data.getlist("supported_languages"):
            if LANGUAGE_RE.match(lang) and lang != default and lang not in langs:
                langs.append(lang)
    return langs
