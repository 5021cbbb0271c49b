"""A block document (templates.blocks) rendered to responsive email HTML through MJML (mjml-python, a binding of
the Rust MRML), CSS inlined with css-inline (the `<style>` tags stay for the media queries that stack columns
on phones), and its plain-text part derived from the blocks themselves.

`render_document(document, ...)` is the one entry point; variables (`{{firstName|'there'}}`, `{{unsubscribeUrl}}`,
`{{preferencesUrl}}`, `{{postalAddress}}`) pass through untouched and are personalized per recipient later
(templates.rendering). A document that is a single raw block is its HTML as written (a converted HTML template).
"""

from __future__ import annotations

import contextlib
import html as html_lib
import re
from dataclasses import dataclass
from typing import Any

import css_inline
import mjml

from templates.block_translations import apply_overrides
from templates.blocks import FONT_FAMILIES, iter_blocks
from templates.social_icons import ICON_SIZE, icon_url

POSTAL_ADDRESS_VARIABLE = "postalAddress"
HEADING_SIZES = {1: 28, 2: 22, 3: 18}
SOCIAL_LABELS = {
    "facebook": "Facebook",
    "instagram": "Instagram",
    "linkedin": "LinkedIn",
    "x": "X",
    "youtube": "YouTube",
    "github": "GitHub",
    "pinterest": "Pinterest",
    "web": "Website",
}

_inliner = css_inline.CSSInliner(load_remote_stylesheets=False, keep_style_tags=True)


@dataclass(frozen=True)
class RenderedDocument:
    html: str
    text: str


RAW_MARK = "owlat-raw:"
_RAW_PLACEHOLDER = re.compile(r"<!--" + re.escape(RAW_MARK) + r"([0-9a-f]{2,80})-->")
# C0 control characters (but tab and line breaks): invisible, not allowed in HTML, and refused by MJML's parser
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _attr(value: Any) -> str:
    return html_lib.escape(str(value), quote=True)


def _text(value: str) -> str:
    """Plain text as markup; quotes stay as written so `{{name|'fallback'}}` keeps working."""
    return html_lib.escape(value, quote=False)


def _padding(block: dict[str, Any]) -> str:
    p = block["padding"]
    return f"{p['top']}px {p['right']}px {p['bottom']}px {p['left']}px"


def _attrs(**values: Any) -> str:
    return "".join(f' {k.replace("_", "-")}="{_attr(v)}"' for k, v in values.items() if v not in (None, ""))


def _component(block: dict[str, Any], width: int) -> str:
    kind = block["type"]
    pad = _padding(block)
    if kind == "heading":
        size = HEADING_SIZES[block["level"]]
        tag = f"h{block['level']}"
        attrs = _attrs(align=block["align"], color=block["color"], padding=pad, line_height="1.25")
        style = f"margin:0;font-size:{size}px;font-weight:700"
        return f'<mj-text{attrs}><{tag} style="{style}">{_text(block["text"])}</{tag}></mj-text>'
    if kind == "text":
        size = f"{block['fontSize']}px"
        attrs = _attrs(
            align=block["align"], color=block["color"], padding=pad, font_size=size, line_height="1.5"
        )
        return f"<mj-text{attrs}>{block['html']}</mj-text>"
    if kind == "image":
        if not block["src"]:
            return ""  # not chosen yet (the preview warns)
        img_width = min(block["width"] or width, width)
        attrs = _attrs(
            src=block["src"],
            alt=block["alt"],
            href=block["href"],
            align=block["align"],
            padding=pad,
            width=f"{img_width}px",
            height=f"{block['height']}px" if block["height"] else None,
        )
        return f"<mj-image{attrs}></mj-image>"
    if kind == "button":
        attrs = _attrs(
            href=block["href"],
            align=block["align"],
            padding=pad,
            background_color=block["buttonColor"],
            color=block["textColor"],
            border_radius=f"{block['borderRadius']}px",
            font_size="16px",
            font_weight="600",
            inner_padding="12px 24px",
        )
        return f"<mj-button{attrs}>{_text(block['label'])}</mj-button>"
    if kind == "divider":
        attrs = _attrs(border_color=block["color"], border_width=f"{block['thickness']}px", padding=pad)
        return f"<mj-divider{attrs}></mj-divider>"
    if kind == "spacer":
        return f"<mj-spacer{_attrs(height=str(block['height']) + 'px')}></mj-spacer>"
    if kind == "social":
        elements = "".join(
            f"<mj-social-element{_social_attrs(link)}>{_text(SOCIAL_LABELS[link['network']])}</mj-social-element>"
            for link in block["links"]
        )
        attrs = _attrs(
            align=block["align"],
            padding=pad,
            icon_size=f"{ICON_SIZE}px",
            border_radius="6px",
            mode="horizontal",
        )
        return f"<mj-social{attrs}>{elements}</mj-social>"
    if kind == "footer":
        attrs = _attrs(
            align=block["align"], color=block["color"], padding=pad, font_size="12px", line_height="1.5"
        )
        return f"<mj-text{attrs}>{_footer_html(block)}</mj-text>"
    if kind == "raw":
        # a placeholder MJML passes through; `render_document` puts the HTML in afterwards, as written (MJML's
        # parser would refuse HTML a browser reads, such as `a < b` or a stray closing tag)
        # the id in hex: a comment may not hold `--`, which ids may (`a--b`, `x-`)
        return f"<mj-raw><!--{RAW_MARK}{block['id'].encode().hex()}--></mj-raw>"
    raise ValueError(f"unknown block type {kind}")


def _social_attrs(link: dict[str, str]) -> str:
    # `-noshare`: the link goes to the profile as written, not through the network's share page; the icon is
    # ours (templates.social_icons), not MJML's default from its own host
    label = SOCIAL_LABELS[link["network"]]
    return _attrs(
        name=f"{link['network']}-noshare",
        href=link["url"],
        src=icon_url(link["network"]),
        background_color="transparent",
        alt=label,
        title=label,
    )


def _sized_social_icons(markup: str) -> str:
    """MJML gives a social icon's `<img>` a width only: add its height (square), so mail apps reserve its
    space while images load or are blocked."""
    return markup.replace(
        f'width="{ICON_SIZE}" style="border-radius:',
        f'width="{ICON_SIZE}" height="{ICON_SIZE}" style="border-radius:',
    )


def _footer_html(block: dict[str, Any]) -> str:
    parts = []
    if block["text"].strip():
        parts.append(f'<p style="margin:0 0 8px">{_text(block["text"])}</p>')
    links = []
    if block["showUnsubscribe"]:
        links.append(f'<a href="{{{{unsubscribeUrl}}}}" data-no-track>{_text(block["unsubscribeText"])}</a>')
    if block["showPreferences"]:
        links.append(f'<a href="{{{{preferencesUrl}}}}" data-no-track>{_text(block["preferencesText"])}</a>')
    if links:
        parts.append(f'<p style="margin:0 0 8px">{" · ".join(links)}</p>')
    if block["showAddress"]:
        parts.append(f'<p style="margin:0;white-space:pre-line">{{{{{POSTAL_ADDRESS_VARIABLE}}}}}</p>')
    return "".join(parts)


def _section(block: dict[str, Any], settings: dict[str, Any]) -> str:
    """One block as one MJML section (so each carries its own background); columns as a section of columns,
    their padding around the columns."""
    background = block.get("backgroundColor") or settings["contentBackgroundColor"]
    if block["type"] == "columns":
        width = 600 // len(block["columns"])
        columns = "".join(
            "<mj-column>" + "".join(_component(inner, width) for inner in column["blocks"]) + "</mj-column>"
            for column in block["columns"]
        )
        p = block["padding"]
        # the columns' own blocks carry the side padding: the section's sides only add to it
        sides = f"{max(p['right'] - 25, 0)}px", f"{max(p['left'] - 25, 0)}px"
        padding = f"{p['top']}px {sides[0]} {p['bottom']}px {sides[1]}"
        return f"<mj-section{_attrs(background_color=background, padding=padding)}>{columns}</mj-section>"
    return (
        f"<mj-section{_attrs(background_color=background, padding='0')}><mj-column>"
        f"{_component(block, 600)}</mj-column></mj-section>"
    )


def document_mjml(document: dict[str, Any], *, language: str = "en", preview_text: str = "") -> str:
    """The MJML source of a (cleaned) document."""
    settings = document["settings"]
    font = FONT_FAMILIES[settings["fontFamily"]]
    head = (
        "<mj-head>"
        f'<mj-attributes><mj-all font-family="{_attr(font)}"></mj-all>'
        f'<mj-text color="{settings["textColor"]}"></mj-text></mj-attributes>'
        f"<mj-style>a {{ color: {settings['linkColor']}; }} h1, h2, h3 {{ margin: 0; }} p {{ margin: 0 0 12px; }}</mj-style>"
        + (f"<mj-preview>{_text(preview_text)}</mj-preview>" if preview_text else "")
        + "</mj-head>"
    )
    body = "".join(_section(block, settings) for block in document["blocks"])
    return (
        f'<mjml lang="{_attr(language)}">{head}'
        f'<mj-body width="600px" background-color="{settings["backgroundColor"]}">{body}</mj-body></mjml>'
    )


def render_document(
    document: dict[str, Any],
    *,
    overrides: dict[str, Any] | None = None,
    language: str = "en",
    preview_text: str = "",
) -> RenderedDocument:
    """The email HTML and plain text of a cleaned document in one language (`overrides`: its texts)."""
    document = apply_overrides(document, overrides)
    blocks = document["blocks"]
    if len(blocks) == 1 and blocks[0]["type"] == "raw":
        from templates.rendering import html_to_text

        return RenderedDocument(html=blocks[0]["html"], text=html_to_text(blocks[0]["html"]))
    source = _CONTROL_CHARS.sub("", document_mjml(document, language=language, preview_text=preview_text))
    markup = mjml.mjml2html(source)
    markup = _sized_social_icons(markup)
    # MJML already wrote the block styles inline; a raw block's odd CSS must not make it unsendable
    with contextlib.suppress(ValueError, css_inline.InlineError):
        markup = _inliner.inline(markup)
    raw = {
        block["id"].encode().hex(): block["html"] for block in iter_blocks(blocks) if block["type"] == "raw"
    }
    markup = _RAW_PLACEHOLDER.sub(lambda m: raw.get(m.group(1), ""), markup)  # one pass: never re-read
    return RenderedDocument(html=markup, text=document_text(document))


# --- plain text ----------------------------------------------------------------------------------------


def _block_text(block: dict[str, Any]) -> list[str]:
    from templates.rendering import html_to_text

    kind = block["type"]
    if kind == "heading":
        return [block["text"]]
    if kind == "text":
        return [html_to_text(block["html"])]
    if kind == "image":
        if not block["src"]:
            return []
        alt = block["alt"].strip()
        if block["href"]:
            return [f"{alt or 'Image'} ({block['href']})"]
        return [f"[{alt}]"] if alt else []
    if kind == "button":
        return [f"{block['label']}: {block['href']}"]
    if kind == "divider":
        return ["----------"]
    if kind == "columns":
        return [
            line for column in block["columns"] for inner in column["blocks"] for line in _block_text(inner)
        ]
    if kind == "social":
        return ["\n".join(f"{SOCIAL_LABELS[link['network']]}: {link['url']}" for link in block["links"])]
    if kind == "footer":
        lines = [block["text"].strip()] if block["text"].strip() else []
        if block["showUnsubscribe"]:
            lines.append(f"{block['unsubscribeText']}: {{{{unsubscribeUrl}}}}")
        if block["showPreferences"]:
            lines.append(f"{block['preferencesText']}: {{{{preferencesUrl}}}}")
        if block["showAddress"]:
            lines.append(f"{{{{{POSTAL_ADDRESS_VARIABLE}}}}}")
        return ["\n".join(lines)] if lines else []
    if kind == "raw":
        return [html_to_text(block["html"])]
    return []


def document_text(document: dict[str, Any]) -> str:
    """The plain-text part: each block's text, a blank line between blocks."""
    parts = [text for block in document["blocks"] for text in _block_text(block) if text.strip()]
    return "\n\n".join(parts)
