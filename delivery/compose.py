"""Composing the message of one send row (DLV-16, DLV-20, DLV-21, DLV-23, AUT-31 step 5, AGT-22).

Every message's class (marketing, transactional, reply) and the headers that go with it — bulk markers,
`List-Id`, `Feedback-ID`, one-click `List-Unsubscribe`, the Message-ID label — come from `delivery.headers`.

- campaign (marketing): the row's template in its language, personalized from the row's snapshot; signed click
  links when tracking is on (DLV-20), and the open pixel when the body has enough text not to look image-only
  (`OPEN_PIXEL_MIN_TEXT`; else the message's opens are not measured, `OutgoingMessage.open_tracked`); `List-Id` for topic campaigns; a footer with the
  unsubscribe link (topic and segment campaigns), the preference link (topic campaigns) and the
  organization's postal address — a link the template already has through `{{unsubscribeUrl}}` /
  `{{preferencesUrl}}` is not repeated;
- automation (marketing): the template personalized for the contact, the automation's `List-Id`, and — per
  automation (delivery.mail_options) — the footer with the unsubscribe link (on by default, not repeated when
  the template has `{{unsubscribeUrl}}`) and open/click tracking (off by default);
- transactional: the transactional template with the request's data variables, attachments;
- every template of a row with a contact can use `{{unsubscribeUrl}}` and `{{preferencesUrl}}`; campaign templates
  `{{viewInBrowserUrl}}` too (CMP-27: else the link is added above the footer when the campaign is archived);
- the envelope sender is the row's VERP return path when `BOUNCE_DOMAIN` is set (delivery.verp);
- agent_reply (reply): the given body, `Auto-Submitted: auto-replied` and threading headers, no List-Unsubscribe;
- test: the given content or template, subject prefixed "[Test] ".
"""

from __future__ import annotations

import functools
import html as html_lib
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from django.conf import settings

from delivery import headers as headers_lib
from delivery import tokens, verp
from delivery.mail_options import DEFAULT_OPTIONS, AutomationMailOptions
from delivery.messages import Attachment, OutgoingMessage
from templates.rendering import contact_variables, prepare_template, prepared_uses, render_prepared

UNSUBSCRIBE_VARIABLE = "unsubscribeUrl"
PREFERENCES_VARIABLE = "preferencesUrl"
VIEW_IN_BROWSER_VARIABLE = "viewInBrowserUrl"
POSTAL_ADDRESS_VARIABLE = "postalAddress"  # a block template's footer places the address itself


class ComposeError(Exception):
    """The row cannot be composed (template gone, no content): the send fails with `code`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def message_domain(from_email: str | None) -> str:
    domain = (from_email or "").rpartition("@")[2].strip().lower()
    if domain:
        return domain
    host = urlparse(tokens.site_url()).hostname
    return host or "owlat.localhost"


def return_path_for(send: Any, from_email: str | None) -> str:
    """The row's VERP envelope sender at its sending domain's return-path domain (delivery.verp), or '' when no
    bounce domain is configured."""
    return verp.verp_address(send.ref_kind, send.pk, from_email) or ""


def unsubscribe_mailto_for(send: Any, from_email: str | None) -> str:
    """The row's signed `mailto:` unsubscribe address, read by the bounce intake (delivery.verp), or '' when no
    bounce domain is configured."""
    return verp.unsubscribe_address(send.ref_kind, send.pk, from_email) or ""


def message_id_for(send: Any, from_email: str | None) -> str:
    """Stable per send row (D-07): the row id labelled with the message class (`delivery.headers`)."""
    return headers_lib.message_id(send.pk, getattr(send, "kind", "campaign"), message_domain(from_email))


# --- tracking (DLV-20) ------------------------------------------------------------------------------------

_ANCHOR_RE = re.compile(r"<a\b[^>]*>", re.IGNORECASE)
_HREF_RE = re.compile(r"""(\bhref\s*=\s*)(["'])(.*?)\2""", re.IGNORECASE | re.DOTALL)
_SKIP_PREFIXES = ("mailto:", "tel:", "#", "javascript:", "sms:", "data:")


def rewrite_links(markup: str, *, organization_id: Any, send_id: Any, no_track: tuple[str, ...] = ()) -> str:
    """Rewrite each link to a signed click URL, except mailto/tel/#/javascript, already tracked links, links
    marked `data-no-track`, and the given no-track URLs (view-in-browser, unsubscribe, preferences)."""
    tracked_prefix = f"{tokens.site_url()}/t/c/"

    def anchor(match: re.Match[str]) -> str:
        tag = match.group(0)
        if "data-no-track" in tag.lower():
            return tag
        plan = _anchor_plan(tag)
        if plan is None:
            return tag
        before, target, encoded, after = plan
        if target.startswith(tracked_prefix) or target in no_track:
            return tag
        url = tokens.click_url(
            organization_id=organization_id, send_id=send_id, target=target, encoded=encoded
        )
        return f"{before}{html_lib.escape(url, quote=True)}{after}"

    return _ANCHOR_RE.sub(anchor, markup)


@functools.lru_cache(maxsize=2048)
def _anchor_plan(tag: str) -> tuple[str, str, str, str] | None:
    """How an `<a …>` tag is tracked, worked out once per distinct tag (a campaign's links repeat in every
    message): (the tag up to the href value, the target, `tokens.encode_target(target)`, the rest of the tag),
    or None when its link is never tracked (no href, mailto/tel/#/javascript, not a safe http(s) URL)."""
    m = _HREF_RE.search(tag)
    if m is None:
        return None
    target = html_lib.unescape(m.group(3)).strip()
    if not target or target.lower().startswith(_SKIP_PREFIXES) or not tokens.is_safe_target(target):
        return None
    return tag[: m.start(3)], target, tokens.encode_target(target), tag[m.end(3) :]


#: Below this much visible text (bytes; setting `DELIVERY_OPEN_PIXEL_MIN_TEXT`) a 1×1 image makes the body look
#: image-only to filters (SpamAssassin's HTML_IMAGE_ONLY_04 … _32 cover 0–3,200 bytes of text with any image);
#: such messages get no open pixel, and their opens are not measured (`OutgoingMessage.open_tracked`).
OPEN_PIXEL_MIN_TEXT = 3300
_SKIPPED_BLOCKS_RE = re.compile(r"<(head|style|script)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<[^>]*>")
_SPACE_RE = re.compile(r"\s+")


def visible_text_length(markup: str) -> int:
    """About what a filter counts as the HTML's text: tags, head, styles and scripts removed, whitespace
    collapsed, entities as one character."""
    text = _TAG_RE.sub(" ", _SKIPPED_BLOCKS_RE.sub(" ", markup))
    return len(_SPACE_RE.sub(" ", html_lib.unescape(text)).strip().encode("utf-8"))


def pixel_fits(markup: str) -> bool:
    """The open pixel goes in only when the body has enough text not to look image-only."""
    minimum = getattr(settings, "DELIVERY_OPEN_PIXEL_MIN_TEXT", OPEN_PIXEL_MIN_TEXT)
    return minimum <= 0 or visible_text_length(markup) >= minimum


def add_open_pixel(markup: str, *, organization_id: Any, send_id: Any) -> str:
    url = html_lib.escape(tokens.open_url(organization_id=organization_id, send_id=send_id), quote=True)
    pixel = f'<img src="{url}" width="1" height="1" alt="" style="display:none;border:0" />'
    return _insert_before_body_end(markup, pixel)


def _insert_before_body_end(markup: str, snippet: str) -> str:
    index = markup.rfind("</body>")
    if index == -1 or "</body" in markup[index + 7 :].lower():  # not written in lower case
        index = markup.lower().rfind("</body>")
    if index == -1:
        return markup + snippet
    return markup[:index] + snippet + markup[index:]


# --- footer (DLV-21) -------------------------------------------------------------------------------------


def footer_html(*, unsubscribe: str | None, preferences: str | None, postal_address: str) -> str:
    parts: list[str] = []
    links = []
    if unsubscribe:
        links.append(f'<a href="{html_lib.escape(unsubscribe)}" data-no-track>Unsubscribe</a>')
    if preferences:
        links.append(f'<a href="{html_lib.escape(preferences)}" data-no-track>Manage preferences</a>')
    if links:
        parts.append(f"<p>{' · '.join(links)}</p>")
    if postal_address.strip():
        address = "<br />".join(html_lib.escape(line) for line in postal_address.strip().splitlines())
        parts.append(f"<p>{address}</p>")
    if not parts:
        return ""
    return (
        '<div class="owlat-footer" style="margin-top:24px;font-size:12px;color:#666666;text-align:center">'
        + "".join(parts)
        + "</div>"
    )


def view_in_browser_html(url: str) -> str:
    """CMP-27's view-in-browser link (the campaign's public archive page), not tracked."""
    if not url:
        return ""
    return (
        '<p class="owlat-view-in-browser" style="margin-top:24px;font-size:12px;text-align:center">'
        f'<a href="{html_lib.escape(url)}" data-no-track>View this email in your browser</a></p>'
    )


def footer_text(*, unsubscribe: str | None, preferences: str | None, postal_address: str) -> str:
    lines: list[str] = []
    if unsubscribe:
        lines.append(f"Unsubscribe: {unsubscribe}")
    if preferences:
        lines.append(f"Manage preferences: {preferences}")
    if postal_address.strip():
        lines.append(postal_address.strip())
    return ("\n\n-- \n" + "\n".join(lines)) if lines else ""


# --- composers ----------------------------------------------------------------------------------------


_campaign_content: list[Callable[[Any, str | None, str | None], Any]] = []


def register_campaign_content(fn: Callable[[Any, str | None, str | None], Any]) -> None:
    """`fn(campaign_id, ab_variant, language)` returns the campaign's frozen content (a `PreparedTemplate`)
    or None; the campaign engine registers its content snapshot."""
    if fn not in _campaign_content:
        _campaign_content.append(fn)


def _campaign_prepared(send: Any) -> Any:
    """The content a campaign row is composed from: the campaign's snapshot, taken at its content scan; the
    live template only for a campaign without one (rows queued before snapshots existed)."""
    for fn in _campaign_content:
        prepared = fn(send.campaign_id, send.ab_variant, send.language)
        if prepared is not None:
            return prepared
    template = send.email_template
    if template is None:
        raise ComposeError("TEMPLATE_NOT_FOUND", "Email template not found")
    return prepare_template(template, send.language)


def compose_campaign(send: Any, ctx: Any, *, postal_address: str = "") -> OutgoingMessage:
    """A campaign row (`EmailSend`) with its campaign's send settings (`CampaignSendSettings`)."""
    prepared = _campaign_prepared(send)
    if not prepared.has_html:
        raise ComposeError("TEMPLATE_NO_CONTENT", "Email template has no HTML content")
    org_id = send.organization_id
    site = tokens.site_url()
    unsubscribe = preferences = None
    uses_unsubscribe = prepared_uses(prepared, UNSUBSCRIBE_VARIABLE)
    uses_preferences = prepared_uses(prepared, PREFERENCES_VARIABLE)
    if site and send.contact_id:
        unsubscribe = tokens.unsubscribe_url(
            organization_id=org_id, contact_id=send.contact_id, send_kind="campaign", send_id=send.pk
        )
        if ctx.topic_id or uses_preferences:
            preferences = tokens.preferences_url(organization_id=org_id, contact_id=send.contact_id)
    headers = headers_lib.class_headers(
        headers_lib.MARKETING,
        organization_id=org_id,
        domain=message_domain(ctx.from_email),
        source_kind="campaign",
        source_id=send.campaign_id,
        list_key=ctx.topic_id,
        list_label=ctx.topic_name or "",
        unsubscribe_url=unsubscribe,
        unsubscribe_mailto=unsubscribe_mailto_for(send, ctx.from_email) if unsubscribe else "",
    )
    variables = {
        "email": send.contact_email,
        "firstName": send.contact_first_name or "",
        "lastName": send.contact_last_name or "",
        UNSUBSCRIBE_VARIABLE: unsubscribe or "",
        PREFERENCES_VARIABLE: preferences or "",
        VIEW_IN_BROWSER_VARIABLE: ctx.view_in_browser_url or "",
        POSTAL_ADDRESS_VARIABLE: postal_address,
    }
    if prepared_uses(prepared, POSTAL_ADDRESS_VARIABLE):
        postal_address = ""  # once: the template's footer has it
    rendered = render_prepared(prepared, variables)
    subject = send.personalized_subject or rendered.subject
    # CMP-27: the archive link, unless the template places `{{viewInBrowserUrl}}` itself (never tracked)
    view = "" if prepared_uses(prepared, VIEW_IN_BROWSER_VARIABLE) else (ctx.view_in_browser_url or "")
    # Topic and segment campaigns alike carry a visible unsubscribe link (overriding DLV-21's
    # "segment campaigns: header only"), once: not in the footer when the template has {{unsubscribeUrl}}.
    body_unsubscribe = None if uses_unsubscribe else unsubscribe
    body_preferences = preferences if ctx.topic_id and not uses_preferences else None
    html = _insert_before_body_end(
        rendered.html,
        view_in_browser_html(view)
        + footer_html(
            unsubscribe=body_unsubscribe, preferences=body_preferences, postal_address=postal_address
        ),
    )
    text = (
        rendered.text
        + (f"\n\nView this email in your browser: {view}" if view else "")
        + footer_text(
            unsubscribe=body_unsubscribe, preferences=body_preferences, postal_address=postal_address
        )
    )
    open_tracked = False
    if site and ctx.track:
        no_track = tuple(u for u in (unsubscribe, preferences, ctx.view_in_browser_url) if u)
        html = rewrite_links(html, organization_id=org_id, send_id=send.pk, no_track=no_track)
        if pixel_fits(html):
            html = add_open_pixel(html, organization_id=org_id, send_id=send.pk)
            open_tracked = True
    return OutgoingMessage(
        from_email=ctx.from_email,
        from_name=ctx.from_name or "",
        reply_to=ctx.reply_to or "",
        to=send.contact_email,
        subject=subject,
        html=html,
        text=text,
        headers=headers,
        message_id=message_id_for(send, ctx.from_email),
        organization_id=org_id,
        send_kind="campaign",
        send_id=send.pk,
        return_path=return_path_for(send, ctx.from_email),
        open_tracked=open_tracked,
    )


def _contact_links(send: Any, *, with_preferences: bool) -> tuple[str | None, str | None]:
    """The row's unsubscribe (attributed to it) and preference-centre URLs; None without SITE_URL/contact."""
    if not (tokens.site_url() and send.contact_id):
        return None, None
    unsubscribe = tokens.unsubscribe_url(
        organization_id=send.organization_id,
        contact_id=send.contact_id,
        send_kind="transactional",
        send_id=send.pk,
    )
    preferences = (
        tokens.preferences_url(organization_id=send.organization_id, contact_id=send.contact_id)
        if with_preferences
        else None
    )
    return unsubscribe, preferences


def compose_transactional(
    send: Any,
    *,
    attachments: list[Attachment] | None = None,
    options: AutomationMailOptions | None = None,
    postal_address: str = "",
) -> OutgoingMessage:
    """A `TransactionalSend` of any kind; `from_email` was snapshotted on the row at intake. `options` are the
    automation's mail switches (automation rows; defaults when None), `postal_address` the organization's."""
    kind = send.kind
    options = options or DEFAULT_OPTIONS
    headers: dict[str, str] = {}
    variables = dict(send.data_variables or {})
    subject = send.subject or ""
    unsubscribe = preferences = None
    uses_unsubscribe = uses_preferences = False
    html: str | None
    text: str | None
    if kind == "agent_reply" or (send.html_body or send.text_body):
        html, text = send.html_body, send.text_body
        if not text and html:
            from templates.rendering import html_to_text

            text = html_to_text(html)
    else:
        template = send.transactional_email if kind == "transactional" else send.email_template
        if template is None:
            raise ComposeError("TEMPLATE_NOT_FOUND", "Email template not found")
        if kind == "transactional" and send.contact is not None:
            variables = contact_variables(send.contact, variables)
        prepared = prepare_template(template, send.language)
        uses_unsubscribe = prepared_uses(prepared, UNSUBSCRIBE_VARIABLE)
        uses_preferences = prepared_uses(prepared, PREFERENCES_VARIABLE)
        # transactional mail signs the links only when its template uses them (the API path stays cheap)
        if kind == "automation" or (kind == "transactional" and (uses_unsubscribe or uses_preferences)):
            unsubscribe, preferences = _contact_links(
                send, with_preferences=uses_preferences or (kind == "automation" and options.footer)
            )
            links = {
                UNSUBSCRIBE_VARIABLE: unsubscribe or "",
                PREFERENCES_VARIABLE: preferences or "",
                POSTAL_ADDRESS_VARIABLE: postal_address,
            }
            if kind == "automation":
                variables.update(links)
            else:  # the API caller's own data variables win
                variables = {**links, **variables}
        if prepared_uses(prepared, POSTAL_ADDRESS_VARIABLE):
            variables.setdefault(POSTAL_ADDRESS_VARIABLE, postal_address)
            postal_address = ""  # once: the template's footer has it
        rendered = render_prepared(prepared, variables)
        if not rendered.html.strip():
            raise ComposeError("TEMPLATE_NO_CONTENT", "Email template has no HTML content")
        html, text = rendered.html, rendered.text
        # `send.subject` is the final subject when it was personalized at intake (AUT-31 step 5).
        subject = send.subject or rendered.subject
    if kind == "test":
        subject = f"[Test] {subject}"
    for name, value in (send.extra_headers or {}).items():
        headers[str(name)] = str(value).replace("\r", " ").replace("\n", " ")
    cls = headers_lib.message_class(kind)
    open_tracked = False
    if kind == "automation" and unsubscribe is None:  # content given directly, no template
        unsubscribe, preferences = _contact_links(send, with_preferences=options.footer)
    from_email = send.from_email or ""
    headers.update(
        headers_lib.class_headers(
            cls,
            organization_id=send.organization_id,
            domain=message_domain(from_email),
            source_kind="automation",
            source_id=send.automation_id,
            list_key=send.automation_id,
            list_label="Automation",
            unsubscribe_url=unsubscribe if kind == "automation" else None,
            unsubscribe_mailto=unsubscribe_mailto_for(send, from_email)
            if kind == "automation" and unsubscribe
            else "",
        )
    )
    if kind == "automation":
        if options.footer and html is not None:
            # Overrides AUT-31 step 5's "no footer": the visible link, once.
            body_unsubscribe = None if uses_unsubscribe else unsubscribe
            body_preferences = None if uses_preferences else preferences
            html = _insert_before_body_end(
                html,
                footer_html(
                    unsubscribe=body_unsubscribe, preferences=body_preferences, postal_address=postal_address
                ),
            )
            text = (text or "") + footer_text(
                unsubscribe=body_unsubscribe, preferences=body_preferences, postal_address=postal_address
            )
        if options.track and tokens.site_url() and html:
            # Optional per automation (off by default), the campaign tracking (DLV-20 extended).
            no_track = tuple(u for u in (unsubscribe, preferences) if u)
            html = rewrite_links(
                html, organization_id=send.organization_id, send_id=send.pk, no_track=no_track
            )
            if pixel_fits(html):
                html = add_open_pixel(html, organization_id=send.organization_id, send_id=send.pk)
                open_tracked = True
    return OutgoingMessage(
        from_email=from_email,
        from_name=send.from_name or "",
        reply_to=send.reply_to or "",
        to=send.email,
        subject=subject.replace("\r", " ").replace("\n", " "),
        html=html,
        text=text or "",
        headers=headers,
        attachments=attachments or [],
        message_id=message_id_for(send, from_email),
        organization_id=send.organization_id,
        send_kind=kind,
        send_id=send.pk,
        return_path=return_path_for(send, from_email),
        open_tracked=open_tracked,
    )
