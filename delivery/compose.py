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

import html as html_lib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from delivery import headers as headers_lib
from delivery import tokens, verp
from delivery.mail_options import DEFAULT_OPTIONS, AutomationMailOptions
from delivery.messages import Attachment, OutgoingMessage
from delivery.tracking import insert_before_body_end, tracked
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
    unsubscribe, preferences = _campaign_links(send, ctx, prepared)
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
    html, text = _campaign_body(rendered, prepared, ctx, unsubscribe, preferences, postal_address)
    open_tracked = False
    if tokens.site_url() and ctx.track:
        no_track = tuple(u for u in (unsubscribe, preferences, ctx.view_in_browser_url) if u)
        html, open_tracked = tracked(html, organization_id=org_id, send_id=send.pk, no_track=no_track)
    return OutgoingMessage(
        from_email=ctx.from_email,
        from_name=ctx.from_name or "",
        reply_to=ctx.reply_to or "",
        to=send.contact_email,
        subject=send.personalized_subject or rendered.subject,
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


def _campaign_links(send: Any, ctx: Any, prepared: Any) -> tuple[str | None, str | None]:
    """A campaign row's unsubscribe URL, and its preference-centre URL for topic campaigns or a template that
    places it; None without SITE_URL or contact."""
    if not (tokens.site_url() and send.contact_id):
        return None, None
    org_id = send.organization_id
    unsubscribe = tokens.unsubscribe_url(
        organization_id=org_id, contact_id=send.contact_id, send_kind="campaign", send_id=send.pk
    )
    preferences = None
    if ctx.topic_id or prepared_uses(prepared, PREFERENCES_VARIABLE):
        preferences = tokens.preferences_url(organization_id=org_id, contact_id=send.contact_id)
    return unsubscribe, preferences


def _campaign_body(
    rendered: Any,
    prepared: Any,
    ctx: Any,
    unsubscribe: str | None,
    preferences: str | None,
    postal_address: str,
) -> tuple[str, str]:
    """The rendered campaign's HTML and text with the archive link and the footer added."""
    # CMP-27: the archive link, unless the template places `{{viewInBrowserUrl}}` itself (never tracked)
    view = "" if prepared_uses(prepared, VIEW_IN_BROWSER_VARIABLE) else (ctx.view_in_browser_url or "")
    # Topic and segment campaigns alike carry a visible unsubscribe link (overriding DLV-21's
    # "segment campaigns: header only"), once: not in the footer when the template has {{unsubscribeUrl}}.
    body_unsubscribe = None if prepared_uses(prepared, UNSUBSCRIBE_VARIABLE) else unsubscribe
    body_preferences = (
        preferences if ctx.topic_id and not prepared_uses(prepared, PREFERENCES_VARIABLE) else None
    )
    html = insert_before_body_end(
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
    return html, text


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
    if kind == "agent_reply" or (send.html_body or send.text_body):
        body = _given_body(send, postal_address)
    else:
        body = _template_body(send, options, postal_address)
    subject = f"[Test] {body.subject}" if kind == "test" else body.subject
    if kind == "automation" and body.unsubscribe is None:  # content given directly, no template
        body.unsubscribe, body.preferences = _contact_links(send, with_preferences=options.footer)
    from_email = send.from_email or ""
    headers = _transactional_headers(send, from_email, body.unsubscribe)
    open_tracked = _automation_extras(send, body, options) if kind == "automation" else False
    return OutgoingMessage(
        from_email=from_email,
        from_name=send.from_name or "",
        reply_to=send.reply_to or "",
        to=send.email,
        subject=subject.replace("\r", " ").replace("\n", " "),
        html=body.html,
        text=body.text or "",
        headers=headers,
        attachments=attachments or [],
        message_id=message_id_for(send, from_email),
        organization_id=send.organization_id,
        send_kind=kind,
        send_id=send.pk,
        return_path=return_path_for(send, from_email),
        open_tracked=open_tracked,
    )


@dataclass
class _Body:
    """A transactional row's content as composed so far, and the contact links it carries."""

    html: str | None
    text: str | None
    subject: str
    postal_address: str = ""
    unsubscribe: str | None = None
    preferences: str | None = None
    uses_unsubscribe: bool = False
    uses_preferences: bool = False


def _given_body(send: Any, postal_address: str) -> _Body:
    """The content given on the row (agent replies, API content): the text from the HTML when it has none."""
    html, text = send.html_body, send.text_body
    if not text and html:
        from templates.rendering import html_to_text

        text = html_to_text(html)
    return _Body(html=html, text=text, subject=send.subject or "", postal_address=postal_address)


def _template_body(send: Any, options: AutomationMailOptions, postal_address: str) -> _Body:
    """The row's template rendered with its variables and, where it needs them, the contact's links."""
    kind = send.kind
    template = send.transactional_email if kind == "transactional" else send.email_template
    if template is None:
        raise ComposeError("TEMPLATE_NOT_FOUND", "Email template not found")
    variables = dict(send.data_variables or {})
    if kind == "transactional" and send.contact is not None:
        variables = contact_variables(send.contact, variables)
    prepared = prepare_template(template, send.language)
    uses_unsubscribe = prepared_uses(prepared, UNSUBSCRIBE_VARIABLE)
    uses_preferences = prepared_uses(prepared, PREFERENCES_VARIABLE)
    unsubscribe = preferences = None
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
    return _Body(
        html=rendered.html,
        text=rendered.text,
        # `send.subject` is the final subject when it was personalized at intake (AUT-31 step 5).
        subject=send.subject or rendered.subject,
        postal_address=postal_address,
        unsubscribe=unsubscribe,
        preferences=preferences,
        uses_unsubscribe=uses_unsubscribe,
        uses_preferences=uses_preferences,
    )


def _transactional_headers(send: Any, from_email: str, unsubscribe: str | None) -> dict[str, str]:
    """The row's own extra headers (folded to one line), then its class's headers."""
    kind = send.kind
    headers: dict[str, str] = {}
    for name, value in (send.extra_headers or {}).items():
        headers[str(name)] = str(value).replace("\r", " ").replace("\n", " ")
    automation = kind == "automation"
    headers.update(
        headers_lib.class_headers(
            headers_lib.message_class(kind),
            organization_id=send.organization_id,
            domain=message_domain(from_email),
            source_kind="automation",
            source_id=send.automation_id,
            list_key=send.automation_id,
            list_label="Automation",
            unsubscribe_url=unsubscribe if automation else None,
            unsubscribe_mailto=unsubscribe_mailto_for(send, from_email) if automation and unsubscribe else "",
        )
    )
    return headers


def _automation_extras(send: Any, body: _Body, options: AutomationMailOptions) -> bool:
    """An automation's footer and tracking, per its mail options, added to `body`; True when the open pixel
    was added."""
    unsubscribe, preferences = body.unsubscribe, body.preferences
    if options.footer and body.html is not None:
        # Overrides AUT-31 step 5's "no footer": the visible link, once.
        body_unsubscribe = None if body.uses_unsubscribe else unsubscribe
        body_preferences = None if body.uses_preferences else preferences
        links = {
            "unsubscribe": body_unsubscribe,
            "preferences": body_preferences,
            "postal_address": body.postal_address,
        }
        body.html = insert_before_body_end(body.html, footer_html(**links))
        body.text = (body.text or "") + footer_text(**links)
    if options.track and tokens.site_url() and body.html:
        # Optional per automation (off by default), the campaign tracking (DLV-20 extended).
        no_track = tuple(u for u in (unsubscribe, preferences) if u)
        body.html, open_tracked = tracked(
            body.html, organization_id=send.organization_id, send_id=send.pk, no_track=no_track
        )
        return open_tracked
    return False
