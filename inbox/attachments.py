"""Storing and serving inbound attachments (`inbox.models.InboundAttachment`).

`attachments_store` runs inside the receive transaction: each attachment of the parsed mail becomes a row, its
bytes written to storage when within `INBOX_ATTACHMENT_MAX_BYTES` and the first `INBOX_ATTACHMENT_MAX_COUNT`;
a dangerous one (`inbox.phishing.dangerous_attachment`) is stored but marked, and its message is quarantined by
the scan. Attachment content never reaches a model: the briefing holds bodies only, and the scan reads the
metadata. `attachment_response` serves a file as a download (`Content-Disposition: attachment`, an opaque type,
`nosniff` and the sandbox CSP), so a browser never renders it in our origin.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.http import FileResponse

from inbox.models import InboundAttachment, InboundMessage
from inbox.phishing import dangerous_attachment
from owlat.sandbox import sandbox_policy

#: control, bidi-override and other invisible characters a filename may hide behind (`invoice‮fdp.exe`)
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_UNSAFE = re.compile(r'[\\/:*?"<>|]')


def safe_filename(name: str) -> str:
    """The filename as shown and offered: NFC, invisible and path characters removed, at most 200 characters."""
    name = unicodedata.normalize("NFC", name or "")
    name = _UNSAFE.sub("_", _INVISIBLE.sub("", name)).strip(" .")
    return name[:200]


def attachments_store(message: InboundMessage, contents: list[dict[str, Any]]) -> int:
    """Rows (and stored files) for `contents` — `{"filename", "contentType", "content": bytes}` each — inside
    the caller's transaction; returns how many files were stored. A file written before a rollback stays as an
    orphan in storage, never as a row."""
    stored = 0
    for index, part in enumerate(contents):
        raw = part.get("content") or b""
        shown = safe_filename(str(part.get("filename") or ""))
        ctype = str(part.get("contentType") or "application/octet-stream")[:200]
        reason = dangerous_attachment({"filename": part.get("filename") or "", "contentType": ctype})
        if reason is None and shown != (part.get("filename") or "").strip(" ."):
            # the name carried invisible or bidi characters: judge what it would look like
            reason = dangerous_attachment({"filename": shown, "contentType": ctype})
        row = InboundAttachment(
            organization_id=message.organization_id,
            inbound_message=message,
            filename=shown,
            content_type=ctype,
            size=len(raw),
            sha256=hashlib.sha256(raw).hexdigest(),
            is_dangerous=reason is not None,
            danger_reason=(reason or "")[:200],
        )
        keep = len(raw) <= settings.INBOX_ATTACHMENT_MAX_BYTES and index < settings.INBOX_ATTACHMENT_MAX_COUNT
        if keep:
            row.file.save("attachment", ContentFile(raw), save=False)
            row.is_stored = True
            stored += 1
        row.save()
    return stored


def attachment_response(attachment: InboundAttachment) -> FileResponse:
    """The stored file as a download that no browser renders in our origin."""
    response = FileResponse(
        attachment.file.open("rb"),
        as_attachment=True,
        filename=attachment.filename or "attachment",
        content_type="application/octet-stream",
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = sandbox_policy(remote_content=False)
    response["Cache-Control"] = "private, no-store"
    return response
