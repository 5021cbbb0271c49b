"""The message handed to a transport: what the composer produced, as MIME bytes (SMTP, local) or as a Django
email message (django-anymail backends)."""

from __future__ import annotations

import binascii
import email.charset
import email.policy
import uuid
from dataclasses import dataclass, field
from email import encoders
from email.header import Header
from email.message import Message
from email.mime.base import MIMEBase
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import formataddr, formatdate
from typing import Any

# compat32 with CRLF: the classic `email.mime` API, about twice as fast as `EmailMessage` with the SMTP policy
# (stack-facts: building the MIME message costs about as much as sending it).
_POLICY = email.policy.compat32.clone(linesep="\r\n", max_line_length=None)
_QP_UTF8 = email.charset.Charset("utf-8")
_QP_UTF8.body_encoding = email.charset.QP


def _header(value: str) -> str | Header:
    value = value.replace("\r", " ").replace("\n", " ")
    return value if value.isascii() else Header(value, "utf-8")


def _encoded(value: str) -> str:
    """A header value on one line: ASCII as is, anything else as an RFC 2047 encoded word."""
    value = value.replace("\r", " ").replace("\n", " ")
    return value if value.isascii() else Header(value, "utf-8").encode(linesep="\r\n")


MAX_LINE = 998  # RFC 5322 2.1.1, without the CRLF


def _lines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def text_transfer(text: str) -> tuple[str, bytes]:
    """(charset and Content-Transfer-Encoding, body with CRLF line ends) of a text part: `7bit` for ASCII whose
    lines fit, quoted-printable otherwise — what receivers expect of text (base64 text is a spam signal);
    base64 is kept for binary attachments."""
    text = _lines(text)
    if text.isascii() and all(len(line) <= MAX_LINE for line in text.split("\n")):
        return "us-ascii", text.replace("\n", "\r\n").encode("ascii")
    body = binascii.b2a_qp(text.encode("utf-8"), istext=True)
    return "utf-8", body.replace(b"\n", b"\r\n")


def _text_part(content_type: str, text: str) -> bytes:
    charset, body = text_transfer(text)
    encoding = "7bit" if charset == "us-ascii" else "quoted-printable"
    header = (
        f'Content-Type: {content_type}; charset="{charset}"\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n'
    )
    return header.encode("ascii") + body


def _mime_text(text: str, subtype: str) -> MIMEText:
    """The stdlib part (the attachments path) with the same choice: 7bit ASCII or quoted-printable UTF-8."""
    text = _lines(text)
    if text.isascii() and all(len(line) <= MAX_LINE for line in text.split("\n")):
        return MIMEText(text, subtype, "us-ascii")
    return MIMEText(text, subtype, _QP_UTF8)


def _address(name: str, address: str) -> str:
    return formataddr((name, address), charset="utf-8") if name else address


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
    return_path: str = ""  # the envelope sender (VERP, delivery.verp); empty → the From address
    #: The body carries the open pixel; False when tracking is off or the body is too short for one
    #: (delivery.tracking.OPEN_PIXEL_MIN_TEXT): an open of that message is not measured.
    open_tracked: bool = False
    _bytes: bytes | None = field(default=None, repr=False)

    @property
    def envelope_from(self) -> str:
        return self.return_path or self.from_email

    @property
    def recipients(self) -> list[str]:
        return [self.to]

    @property
    def from_header(self) -> str:
        return formataddr((self.from_name, self.from_email)) if self.from_name else self.from_email

    def as_email_message(self) -> Message:
        """The MIME message (stdlib `email.mime`; text + HTML alternative, attachments in a mixed part)."""
        body: Message = MIMEMultipart("alternative")
        body.attach(_mime_text(self.text or "", "plain"))
        if self.html:
            body.attach(_mime_text(self.html, "html"))
        else:
            body = _mime_text(self.text or "", "plain")
        if self.attachments:
            mixed = MIMEMultipart("mixed")
            mixed.attach(body)
            for att in self.attachments:
                maintype, _, subtype = (att.content_type or "application/octet-stream").partition("/")
                part = MIMEBase(maintype, subtype or "octet-stream")
                part.set_payload(att.content)
                encoders.encode_base64(part)
                part.add_header("Content-Disposition", "attachment", filename=("utf-8", "", att.filename))
                mixed.attach(part)
            msg = mixed
        else:
            msg = body
        msg["From"] = _address(self.from_name, self.from_email)
        msg["To"] = self.to
        msg["Subject"] = _header(self.subject)
        msg["Message-ID"] = self.message_id
        msg["Date"] = formatdate(localtime=False, usegmt=True)
        if self.reply_to:
            msg["Reply-To"] = self.reply_to
        for name, value in self.headers.items():
            msg[name] = _header(value)
        return msg

    def as_bytes(self) -> bytes:
        """The message as sent on the wire (CRLF line ends). Without attachments it is written directly
        (multipart/alternative, 7bit or quoted-printable parts); the stdlib generator re-folds every header through `Header` and
        compiles a regex per message for its boundary check, which makes it the largest CPU cost of a send.
        With attachments the stdlib `email.mime` generator is used."""
        if self._bytes is None:
            if self.attachments:
                self._bytes = self.as_email_message().as_bytes(policy=_POLICY)
            else:
                self._bytes = self._write()
        return self._bytes

    def _write(self) -> bytes:
        lines = [
            f"From: {_address(self.from_name, self.from_email)}",
            f"To: {_encoded(self.to)}",
            f"Subject: {_encoded(self.subject)}",
            f"Message-ID: {_encoded(self.message_id)}",
            f"Date: {formatdate(localtime=False, usegmt=True)}",
        ]
        if self.reply_to:
            lines.append(f"Reply-To: {_encoded(self.reply_to)}")
        for name, value in self.headers.items():
            lines.append(f"{name}: {_encoded(value)}")
        lines.append("MIME-Version: 1.0")
        text_part = _text_part("text/plain", self.text or "")
        if self.html:
            html_part = _text_part("text/html", self.html)
            # "=_" never occurs in quoted-printable (every "=" is escaped); 7bit text is checked
            boundary = f"=_owlat_{uuid.uuid4().hex}"
            while boundary.encode() in text_part or boundary.encode() in html_part:
                boundary = f"=_owlat_{uuid.uuid4().hex}"
            lines.append(f'Content-Type: multipart/alternative; boundary="{boundary}"')
            head = "\r\n".join(lines).encode("ascii")
            return b"".join(
                [
                    head,
                    b"\r\n\r\n",
                    f"--{boundary}\r\n".encode(),
                    text_part,
                    f"\r\n--{boundary}\r\n".encode(),
                    html_part,
                    f"\r\n--{boundary}--\r\n".encode(),
                ]
            )
        return "\r\n".join(lines).encode("ascii") + b"\r\n" + text_part

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
