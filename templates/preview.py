"""The template preview shows the real message: the contact's (or sample) personalization, the subject, sender,
preheader and footer with working links, and the warnings an operator should see before sending.

The footer is the block template's own (its `{{unsubscribeUrl}}` … personalized with the contact's real, signed
links, from delivery through templates.services.recipient_links); a template without one gets the footer
delivery adds to campaign mail, so the preview shows what a campaign recipient would get.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from owlat.organizations import organization_settings
from templates.rendering import (
    RenderedEmail,
    contact_variables,
    prepare_template,
    prepared_uses,
    render_prepared,
)
from templates.services import recipient_links

GMAIL_CLIP_BYTES = 100 * 1024
SAMPLE = {"email": "sample@example.com", "firstName": "", "lastName": ""}
DARK_MODE_STYLE = (
    "<style>html{filter:invert(1) hue-rotate(180deg);background:#fff}"
    "img,[style*='background-image']{filter:invert(1) hue-rotate(180deg)}</style>"
)


@dataclass
class Preview:
    rendered: RenderedEmail
    from_email: str
    from_name: str
    html: str
    warnings: list[str] = field(default_factory=list)


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.no_alt = self.no_size = 0
        self.insecure: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "img":
            if values.get("width") == "1" and values.get("height") == "1":
                return  # a tracking pixel
            if values.get("alt") is None or not (values.get("alt") or "").strip():
                self.no_alt += 1
            if not values.get("width") or not values.get("height") or values.get("height") == "auto":
                self.no_size += 1
            if (values.get("src") or "").startswith("http://"):
                self.insecure.append(values.get("src") or "")
        elif tag == "a" and (values.get("href") or "").startswith("http://"):
            self.insecure.append(values.get("href") or "")


def preview_warnings(markup: str) -> list[str]:
    """What would hurt the message in inboxes: images without alt text or size, http links, Gmail's clipping."""
    audit = _Audit()
    audit.feed(markup)
    warnings = []
    if audit.no_alt:
        warnings.append(
            f"{audit.no_alt} image(s) without alt text: add what the image shows (image block → Alt text)."
        )
    if audit.no_size:
        warnings.append(
            f"{audit.no_size} image(s) without a width and height: some clients show them at full size or jump "
            "while loading (pick them from the library)."
        )
    for url in dict.fromkeys(audit.insecure):
        warnings.append(f"Not https: {url[:120]} — use https:// links and images.")
    size = len(markup.encode())
    if size > GMAIL_CLIP_BYTES:
        warnings.append(
            f"The HTML is {size // 1024} KB: Gmail clips messages over 102 KB (hiding the footer and unsubscribe "
            "link). Shorten it or remove raw HTML."
        )
    return warnings


def _footer(links: dict[str, str], postal_address: str) -> str:
    parts = []
    if links.get("unsubscribeUrl"):
        parts.append(f'<a href="{html_lib.escape(links["unsubscribeUrl"])}">Unsubscribe</a>')
    if links.get("preferencesUrl"):
        parts.append(f'<a href="{html_lib.escape(links["preferencesUrl"])}">Manage preferences</a>')
    address = "<br>".join(html_lib.escape(line) for line in postal_address.strip().splitlines())
    body = " · ".join(parts) + (f"<br>{address}" if address else "")
    if not body:
        return ""
    return f'<div style="margin-top:24px;font-size:12px;color:#666;text-align:center">{body}</div>'


def template_preview(
    template: Any, *, contact: Any = None, language: str | None = None, subject: str | None = None
) -> Preview:
    """The message `contact` (None: sample data) would get in `language`."""
    organization = template.organization
    variables = contact_variables(contact) if contact is not None else dict(SAMPLE)
    links = recipient_links(organization_id=template.organization_id, contact_id=getattr(contact, "pk", None))
    variables.update(links)
    variables["postalAddress"] = organization.postal_address or ""
    prepared = prepare_template(template, language)
    rendered = render_prepared(prepared, variables, subject_override=subject)
    markup = rendered.html
    if not prepared_uses(prepared, "unsubscribeUrl"):
        footer = _footer(
            links, "" if prepared_uses(prepared, "postalAddress") else organization.postal_address
        )
        index = markup.lower().rfind("</body>")
        markup = markup[:index] + footer + markup[index:] if index != -1 else markup + footer
    settings = organization_settings(template.organization_id)
    warnings = preview_warnings(markup)
    if not links:
        warnings.append("Sample data: the unsubscribe and preference links work once you pick a contact.")
    if re.search(r"\bmj-image\b|<img[^>]*src=\"\"", markup):
        warnings.append("An image block has no image chosen yet.")
    return Preview(
        rendered=rendered,
        from_email=(settings.default_from_email or "").strip(),
        from_name=(settings.default_from_name or "").strip(),
        html=markup,
        warnings=warnings,
    )


def dark_mode(markup: str) -> str:
    """The message as mail apps that invert colours show it in dark mode (images kept as they are)."""
    index = markup.lower().find("</head>")
    return markup[:index] + DARK_MODE_STYLE + markup[index:] if index != -1 else DARK_MODE_STYLE + markup
