"""The template preview shows the real message: the contact's (or sample) personalization, the subject, sender,
preheader and footer with working links, and the warnings an operator should see before sending.

The footer is the block template's own (its `{{unsubscribeUrl}}` … personalized with the contact's real, signed
links, from delivery through templates.services.recipient_links); a template without one gets the footer
delivery adds to campaign mail, so the preview shows what a campaign recipient would get.

Variables are read as the rendering reads them (templates.rendering's parsed slots, `{{name|'fallback'}}`): a
variable without a fallback that is empty for the previewed contact is named in the warnings, with where it is
and the fallback that would fill it.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from owlat.organizations import organization_settings
from templates.models import TransactionalEmail
from templates.rendering import (
    RenderedEmail,
    contact_variables,
    prepare_template,
    prepared_uses,
    render_prepared,
)
from templates.services import recipient_links

GMAIL_CLIP_BYTES = 100 * 1024
# the contact's own variables (templates.rendering.contact_variables), as an operator names them
CONTACT_FIELDS = {"firstName": "first name", "lastName": "last name", "email": "email address"}
# filled in per message when it is sent (signed links, the campaign's archive): no value in a preview is expected
SEND_TIME = frozenset({"unsubscribeUrl", "preferencesUrl", "viewInBrowserUrl"})
FALLBACK_EXAMPLES = {"firstName": "there"}
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


def _parts_without_fallback(prepared: Any) -> dict[str, list[str]]:
    """Variable → the parts of the message (subject, preheader, body) that use it without a fallback."""
    parts = (
        ("the subject", prepared.subject),
        ("the preheader", prepared.preview_text),
        ("the body", prepared.html),
        ("the body", prepared.text),
    )
    found: dict[str, list[str]] = {}
    for where, compiled in parts:
        for name, fallback in compiled.slots:
            if fallback is None and where not in found.setdefault(name, []):
                found[name].append(where)
    return {name: places for name, places in found.items() if places}


def missing_variable_warnings(
    prepared: Any, variables: dict[str, Any], *, contact: Any = None, transactional: bool = False
) -> list[str]:
    """The variables the message uses without a fallback that are empty for `contact` (None: the sample, a
    contact with nothing filled in): each is sent as an empty string."""
    who = f"{contact.email} has" if contact is not None else "A contact with"
    warnings = []
    for name, places in _parts_without_fallback(prepared).items():
        if name in SEND_TIME or str(variables.get(name) or "").strip():
            continue
        where = " and ".join(places)
        example = "{{" + name + "|'" + FALLBACK_EXAMPLES.get(name, "…") + "'}}"
        if name in CONTACT_FIELDS:
            field = CONTACT_FIELDS[name]
            lead = f"{who} no {field}" if contact is not None else f"{who}out a {field}"
            warnings.append(
                f"{lead}: {{{{{name}}}}} in {where} is sent empty. Give it a fallback, {example}, "
                f"or fill in the contact's {field}."
            )
        elif name == "postalAddress":
            warnings.append(
                f"{{{{postalAddress}}}} in {where} is empty: set the organization's postal address "
                "(Organizations → your organization); the law requires it in marketing mail."
            )
        elif transactional:
            warnings.append(
                f"{{{{{name}}}}} in {where} comes from the send request's dataVariables (the preview has none): "
                f"a request without it is refused unless it has a fallback, {example}."
            )
        else:
            warnings.append(
                f"{{{{{name}}}}} in {where} is not a variable Owlat fills in: it is sent empty. Use one of "
                f"{', '.join('{{' + n + '}}' for n in CONTACT_FIELDS)}, or give it a fallback, {example}."
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
    warnings = missing_variable_warnings(
        prepared, variables, contact=contact, transactional=isinstance(template, TransactionalEmail)
    )
    warnings += preview_warnings(markup)
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
