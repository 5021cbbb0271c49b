"""Rendering of templates (DOM-13, AUT-31 step 5, CMP-31): language resolution, CSS inlining, a plain-text
alternative, and personalization with `{{var}}` / `{{var|'fallback'}}`.

Preparing a template (language choice, CSS inlining, text derivation, parsing the variables) is done once per
template version and language and cached in the process; personalizing a prepared template for one recipient
is a join over pre-split parts, cheap enough to run for every message of a large campaign.
"""

from __future__ import annotations

import html
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import css_inline

# {{ name }} or {{ name | 'fallback' }} (single or double quotes).
VARIABLE_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*(?:\|\s*(?:'([^']*)'|\"([^\"]*)\")\s*)?\}\}")
_CRLF_RE = re.compile(r"[\r\n]+")

_inliner = css_inline.CSSInliner(load_remote_stylesheets=False, keep_style_tags=False)


def inline_css(markup: str) -> str:
    """Move `<style>` rules into `style` attributes (css-inline); remote stylesheets are never fetched."""
    if not markup:
        return markup
    try:
        return _inliner.inline(markup)
    except (ValueError, css_inline.InlineError):
        # Unparseable CSS must not make the template unsendable; send it as written.
        return markup


def value_to_text(value: Any) -> str:
    """A personalization value as text (JSON-like spelling for booleans)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- Pre-split templates --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compiled:
    """A text split into literal parts and variable slots: parts[0], var0, parts[1], var1, ..., parts[n]."""

    parts: tuple[str, ...]
    slots: tuple[tuple[str, str | None], ...]  # (name, fallback)

    def render(self, variables: dict[str, Any], *, escape: bool = False, single_line: bool = False) -> str:
        if not self.slots:
            text = self.parts[0]
        else:
            out = [self.parts[0]]
            for (name, fallback), literal in zip(self.slots, self.parts[1:], strict=True):
                value = value_to_text(variables.get(name))
                if value == "" and fallback is not None:
                    value = fallback
                if single_line:
                    value = _CRLF_RE.sub(" ", value)
                out.append(html.escape(value, quote=True) if escape else value)
                out.append(literal)
            text = "".join(out)
        if single_line:
            text = _CRLF_RE.sub(" ", text).strip()
        return text


def compile_text(text: str | None) -> Compiled:
    text = text or ""
    parts: list[str] = []
    slots: list[tuple[str, str | None]] = []
    pos = 0
    for match in VARIABLE_RE.finditer(text):
        parts.append(text[pos : match.start()])
        fallback = match.group(2) if match.group(2) is not None else match.group(3)
        if fallback is not None:
            # In HTML the fallback was written as markup text; decode its entities once (escaped on output).
            fallback = html.unescape(fallback)
        slots.append((match.group(1), fallback))
        pos = match.end()
    parts.append(text[pos:])
    return Compiled(tuple(parts), tuple(slots))


def personalize(text: str | None, variables: dict[str, Any], *, html_mode: bool = False) -> str:
    """Replace `{{var}}` / `{{var|'fallback'}}`; values are HTML-escaped in `html_mode`."""
    return compile_text(text).render(variables, escape=html_mode)


def personalize_subject(text: str | None, variables: dict[str, Any]) -> str:
    """Subjects never carry CR/LF (header injection), neither from the template nor from a value."""
    return compile_text(text).render(variables, single_line=True)


# --- Plain-text alternative -----------------------------------------------------------------------------

_BLOCK_TAGS = {
    "p",
    "div",
    "br",
    "tr",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "blockquote",
    "hr",
}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._skip = 0
        self._href: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip += 1
        elif tag == "a":
            self._href.append(dict(attrs).get("href"))
        elif tag == "li":
            self.out.append("\n- ")
        elif tag in _BLOCK_TAGS:
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip = max(0, self._skip - 1)
        elif tag == "a":
            href = self._href.pop() if self._href else None
            if href and href.startswith(("http://", "https://")):
                self.out.append(f" ({href})")
        elif tag in _BLOCK_TAGS and tag != "li":
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.out.append(re.sub(r"\s+", " ", data))


def html_to_text(markup: str | None) -> str:
    """A readable plain-text version of an HTML body (links kept as `text (url)`)."""
    if not markup:
        return ""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.out)
    lines = [line.strip() for line in text.splitlines()]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# --- Language resolution (DOM-13) -----------------------------------------------------------------------


def _translation(template: Any, language: str) -> dict[str, Any] | None:
    translations = template.html_translations or {}
    for candidate in (language, language.lower(), language.split("-")[0].lower()):
        entry = translations.get(candidate)
        if isinstance(entry, dict) and (entry.get("htmlContent") or "").strip():
            return entry
    return None


def resolve_language(template: Any, requested: str | None) -> str:
    """The language whose content is sent: the requested one when it is the default or has translated HTML,
    else the template's default language (DOM-13)."""
    default = template.default_language or "en"
    if not requested or requested.lower() == default.lower():
        return default
    if _translation(template, requested) is not None:
        return requested
    return default


@dataclass(frozen=True)
class PreparedTemplate:
    """Language-resolved, CSS-inlined content of one template version, split for fast personalization."""

    language: str
    subject: Compiled
    html: Compiled
    text: Compiled
    preview_text: Compiled
    has_html: bool


@dataclass(frozen=True)
class ContentSources:
    """The pre-personalisation content of one template version in one language: what a campaign's content
    snapshot stores, and what `prepared_from_sources` compiles for personalisation at send."""

    language: str
    subject: str
    preheader: str
    html: str  # CSS-inlined
    text: str


def template_sources(template: Any, language: str | None) -> ContentSources:
    """The language-resolved (DOM-13), CSS-inlined sources of `template`, placeholders not yet filled."""
    from templates.block_render import document_text
    from templates.block_translations import apply_overrides
    from templates.blocks import BlockError, document_clean, is_block_document
    from templates.content import language_texts

    resolved = resolve_language(template, language)
    default = template.default_language or "en"
    entry = _translation(template, resolved) if resolved != default else None
    if entry is not None:
        html_source = entry.get("htmlContent") or ""
        subject = entry.get("subject") or template.subject
        text_source = ""  # plain text is written only for the default language (CMP-31)
    else:
        html_source = template.html_content or ""
        subject = template.subject
        text_source = template.plain_text_content or ""
    document = getattr(template, "content", None)
    try:
        document = document_clean(document) if is_block_document(document) and html_source else None
    except BlockError:
        document = None  # written around the services: treated as HTML
    if not html_source.strip():
        inlined, derived = "", ""
    elif document is not None:
        # rendered from blocks: inlined already, its <style> kept for the media queries (templates.content)
        inlined = html_source
        derived = document_text(apply_overrides(document, language_texts(template, resolved)))
    else:
        inlined = inline_css(html_source)
        derived = html_to_text(inlined)
    return ContentSources(
        language=resolved,
        subject=subject or "",
        preheader=getattr(template, "preview_text", None) or "",
        html=inlined,
        text=text_source or derived,
    )


def prepared_from_sources(sources: ContentSources) -> PreparedTemplate:
    return PreparedTemplate(
        language=sources.language,
        subject=compile_text(sources.subject),
        html=compile_text(sources.html),
        text=compile_text(sources.text),
        preview_text=compile_text(sources.preheader),
        has_html=bool(sources.html.strip()),
    )


def _prepare(template: Any, language: str | None) -> PreparedTemplate:
    return prepared_from_sources(template_sources(template, language))


def prepared_uses(prepared: PreparedTemplate, name: str) -> bool:
    """Whether the template's HTML or text personalizes `{{name}}` (e.g. `unsubscribeUrl`: no footer link then)."""
    return any(slot == name for compiled in (prepared.html, prepared.text) for slot, _ in compiled.slots)


_CACHE_SIZE = 256
_cache: OrderedDict[tuple, PreparedTemplate] = OrderedDict()
_cache_lock = threading.Lock()


def prepare_template(template: Any, language: str | None = None) -> PreparedTemplate:
    """Cached per (model, id, updated_at, language): an edited template is prepared again."""
    key = (type(template).__name__, str(template.pk), str(template.updated_at), (language or "").lower())
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    prepared = _prepare(template, language)
    with _cache_lock:
        _cache[key] = prepared
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return prepared


@dataclass(frozen=True)
class RenderedEmail:
    subject: str
    html: str
    text: str
    language: str
    preview_text: str = ""


def render_prepared(
    prepared: PreparedTemplate, variables: dict[str, Any], *, subject_override: str | None = None
) -> RenderedEmail:
    subject_source = compile_text(subject_override) if subject_override else prepared.subject
    return RenderedEmail(
        subject=subject_source.render(variables, single_line=True),
        html=prepared.html.render(variables, escape=True),
        text=prepared.text.render(variables),
        language=prepared.language,
        preview_text=prepared.preview_text.render(variables, single_line=True),
    )


def render_template(
    template: Any,
    *,
    variables: dict[str, Any],
    language: str | None = None,
    subject_override: str | None = None,
) -> RenderedEmail:
    """Render `template` for one recipient: language, inlined CSS, personalized subject, HTML and text."""
    return render_prepared(prepare_template(template, language), variables, subject_override=subject_override)


def contact_variables(contact: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The personalization variables of a contact (`email`, `firstName`, `lastName`) plus `extra`."""
    variables: dict[str, Any] = {}
    if contact is not None:
        variables = {
            "email": contact.email or "",
            "firstName": contact.first_name or "",
            "lastName": contact.last_name or "",
        }
    if extra:
        variables.update(extra)
    return variables
