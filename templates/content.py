"""What a block template stores besides its document: the HTML it sends, per language (DOM-13).

A template whose `content` is a block document (templates.blocks) sends HTML rendered from it: `html_content` for
the default language and `html_translations[lang].htmlContent` for each other language that has texts of its own
or a subject of its own (`translations[lang]` holds the texts, block id → field → text). The rendering runs on
every write of the document, its texts, the preview text or the languages (`content_render`), so every reader of
`html_content` — delivery, the campaign snapshot, publishing — sees what the blocks say. A template without a block
document keeps the HTML its author wrote (raw HTML mode).
"""

from __future__ import annotations

from typing import Any

from templates.block_render import render_document
from templates.block_translations import overrides_clean
from templates.blocks import document_clean, is_block_document

# the writes after which the rendered HTML is rendered again
RENDER_INPUTS = frozenset(
    {
        "content",
        "translations",
        "preview_text",
        "default_language",
        "supported_languages",
        "html_translations",
    }
)


def content_render(template: Any) -> list[str]:
    """Render a block template's HTML into its fields (not saved); the names of the fields it set. The document
    and its texts are cleaned again (`BlockError` when invalid: callers validate first, naming the field)."""
    document = getattr(template, "content", None)
    if not is_block_document(document):
        return []
    document = template.content = document_clean(document)
    template.translations = overrides_clean(template.translations, document)
    default = template.default_language or "en"
    preview = template.preview_text or ""
    template.html_content = render_document(document, language=default, preview_text=preview).html
    overrides = template.translations if isinstance(template.translations, dict) else {}
    stored = template.html_translations if isinstance(template.html_translations, dict) else {}
    languages = [
        lang
        for lang in dict.fromkeys([*(template.supported_languages or []), *overrides.keys(), *stored.keys()])
        if lang and lang != default
    ]
    translations: dict[str, dict[str, str]] = {}
    for lang in languages:
        subject = (stored.get(lang) or {}).get("subject") or ""
        texts = overrides.get(lang) or {}
        if not texts and not subject:
            continue
        entry = {
            "htmlContent": render_document(
                document, overrides=texts, language=lang, preview_text=preview
            ).html
        }
        if subject:
            entry["subject"] = subject
        translations[lang] = entry
    template.html_translations = translations
    return ["content", "translations", "html_content", "html_translations"]


def language_texts(template: Any, language: str) -> dict[str, Any] | None:
    """The block texts of `language` (None for the default language or a template without blocks)."""
    if not is_block_document(getattr(template, "content", None)):
        return None
    if language == (template.default_language or "en"):
        return None
    overrides = template.translations if isinstance(template.translations, dict) else {}
    return overrides.get(language) or {}
