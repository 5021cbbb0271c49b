"""The message handed to a transport: what the composer produced, as MIME bytes (SMTP, local) or as a Django
email message (django-anymail backends)."""

from __future__ import annotations

import email.policy
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formataddr
from typing import Any

_POLICY = email.policy.SMTP


@dataclass
class Attachment:
    filename: str
    content: bytes
    content_type: str = "application/octet-stream"


@dataclass
class OutgoingMessage:
    from_email: str
    to: str
    subject: str
    message_id: str  # with angle brackets, stable per send row (D-07)
    html: str | None = None
    text: str | None = None
    from_name: str = ""
    reply_to: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    organization_id: Any = None
    send_kind: str | None = None
    send_id: Any = None
    _bytes: bytes | None = field(default=None, repr=False)

    @property
    def envelope_from(self) -> str:
        return self.from_email

    @property
    def recipients(self) -> list[str]:
        return [self.to]

    @property
    def from_header(self) -> str:
        return formataddr((self.from_name, self.from_email)) if self.from_name else self.from_email

    def as_email_message(self) -> EmailMessage:
        msg = EmailMessage(policy=_POLICY)
        msg["From"] = self.from_header
        msg["To"] = self.to
        msg["Subject"] = self.subject
        msg["Message-ID"] = self.message_id
        from email.utils import formatdate

        msg["Date"] = formatdate(localtime=False, usegmt=True)
        if self.reply_to:
            msg["Reply-To"] = self.reply_to
        for name, value in self.headers.items():
            msg[name] = value
        msg.set_content(self.text or "", charset="utf-8")
        if self.html:
            msg.add_alternative(self.html, subtype="html", charset="utf-8")
        for att in self.attachments:
            maintype, _, subtype = (att.content_type or "application/octet-stream").partition("/")
            msg.add_attachment(
                att.content, maintype=maintype, subtype=subtype or "octet-stream", filename=att.filename
            )
        return msg

    def as_bytes(self) -> bytes:
        if self._bytes is None:
            self._bytes = self.as_email_message().as_bytes(policy=_POLICY)
        return self._bytes

    def as_django(self, *, connection: Any = None) -> Any:
        from django.core.mail import EmailMultiAlternatives

        headers = {"Message-ID": self.message_id, **self.headers}
        msg = EmailMultiAlternatives(
            subject=self.subject,
            body=self.text or "",
            from_email=self.from_header,
            to=[self.to],
            reply_to=[self.reply_to] if self.reply_to else None,
            headers=headers,
            connection=connection,
        )
        if self.html:
            msg.attach_alternative(self.html, "text/html")
        for att in self.attachments:
            msg.attach(att.filename, att.content, att.content_type)
        return msg
