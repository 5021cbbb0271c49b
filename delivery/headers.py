"""The one place that decides a message's class and the headers receivers judge it by.

Classes:
- `marketing` — campaigns and automations: `Precedence: bulk`, `Auto-Submitted: auto-generated`, a `List-Id`
  (the campaign's topic; the automation), a `Feedback-ID` (Gmail's feedback loop: kind, organization, source,
  sender id) and the one-click `List-Unsubscribe` pair (RFC 8058) when the row has a contact;
- `transactional` — API transactional mail, test sends: none of the bulk markers;
- `reply` — agent replies to inbound mail: `Auto-Submitted: auto-replied` (RFC 3834), never bulk markers.

The Message-ID carries the class as its label (`<row id>.<class>@<domain>`): stable per send row (D-07) and
telling a reader what kind of mail it is. The DKIM signature covers every header set here
(`owlat.domains.signing.SIGNED_HEADERS`).
"""

from __future__ import annotations

import re
from typing import Any

MARKETING, TRANSACTIONAL, REPLY = "marketing", "transactional", "reply"
CLASSES = (MARKETING, TRANSACTIONAL, REPLY)

_CLASS_OF_KIND = {
    "campaign": MARKETING,
    "automation": MARKETING,
    "transactional": TRANSACTIONAL,
    "test": TRANSACTIONAL,
    "agent_reply": REPLY,
}

#: Feedback-ID's last field: the sender id, constant for this installation's mail.
FEEDBACK_SENDER = "owlat"


def message_class(send_kind: str | None) -> str:
    """The class of a send row's kind (`campaign` for every `EmailSend`); unknown kinds are transactional."""
    return _CLASS_OF_KIND.get(send_kind or "", TRANSACTIONAL)


def message_id(send_id: Any, send_kind: str | None, domain: str) -> str:
    """`<hex row id>.<class>@<domain>`, derived from the row, never random per attempt (D-07)."""
    hex_id = send_id.hex if hasattr(send_id, "hex") else str(send_id).replace("-", "")
    return f"<{hex_id}.{message_class(send_kind)}@{domain}>"


def _list_label(name: str) -> str:
    return re.sub(r"[^\w .-]", "", name or "").strip()


def list_id(list_key: Any, domain: str, label: str = "") -> str:
    """RFC 2919 `List-Id`: `Label <key.domain>` (the label is a phrase of safe characters, or absent)."""
    clean = _list_label(label)
    value = f"{list_key}.{domain}"
    return f"{clean} <{value}>" if clean else f"<{value}>"


def list_unsubscribe_headers(url: str, mailto: str = "") -> dict[str, str]:
    """RFC 8058 one-click: the https URL (the one receivers POST to) first, a `mailto:` fallback beside it
    when the bounce intake offers one; `List-Unsubscribe-Post` names the one-click form."""
    targets = [f"<{url}>"]
    if mailto:
        targets.append(f"<mailto:{mailto}>")
    return {"List-Unsubscribe": ", ".join(targets), "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}


def class_headers(
    cls: str,
    *,
    organization_id: Any,
    domain: str,
    source_kind: str = "",
    source_id: Any = None,
    list_key: Any = None,
    list_label: str = "",
    unsubscribe_url: str | None = None,
    unsubscribe_mailto: str = "",
) -> dict[str, str]:
    """The class's headers. `source_kind`/`source_id` name what sent it (campaign, automation) for the
    Feedback-ID; `list_key`/`list_label` the list for `List-Id` (none: no `List-Id`); `unsubscribe_url` the row's
    signed one-click URL (marketing only; transactional templates use `{{unsubscribeUrl}}` in the body)."""
    if cls == REPLY:
        return {"Auto-Submitted": "auto-replied"}
    if cls != MARKETING:
        return {}
    headers = {
        "Precedence": "bulk",
        "Auto-Submitted": "auto-generated",
        "Feedback-ID": f"{source_kind or 'marketing'}:{organization_id}:{source_id or ''}:{FEEDBACK_SENDER}",
    }
    if list_key:
        headers["List-Id"] = list_id(list_key, domain, list_label)
    if unsubscribe_url:
        headers.update(list_unsubscribe_headers(unsubscribe_url, unsubscribe_mailto))
    return headers
