"""The `smtp` provider: `EMAIL_URL` parsing and one `smtplib` connection per batch, spoken directly so a
connection lost after the end of DATA can be told from a refusal before it (D-07, D-08)."""

from __future__ import annotations

import contextlib
import re
import smtplib
import ssl
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlparse

from delivery.messages import OutgoingMessage
from delivery.providers.base import (
    AMBIGUOUS_TIMEOUT,
    AUTH_FAILED,
    DKIM_UNAVAILABLE,
    SERVER_ERROR,
    SMTPUTF8_UNSUPPORTED,
    DispatchError,
    smtp_error_code,
)


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    username: str = ""
    password: str = ""
    use_tls: bool = False
    use_ssl: bool = False
    timeout: float = 30.0


def parse_email_url(url: str) -> SmtpConfig | None:
    """`EMAIL_URL` in django-environ's form; None when it is not an SMTP URL with a host."""
    if not url:
        return None
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    if scheme not in ("smtp", "smtps", "smtp+tls", "smtp+ssl", "submission") or not parsed.hostname:
        return None
    use_ssl = scheme in ("smtps", "smtp+ssl")
    use_tls = scheme in ("smtp+tls", "submission")
    query = parse_qs(parsed.query)
    if query.get("ssl", [""])[0].lower() in ("1", "true"):
        use_ssl = True
    if query.get("tls", [""])[0].lower() in ("1", "true"):
        use_tls = True
    default_port = 465 if use_ssl else (587 if use_tls else 25)
    timeout = float(query.get("timeout", ["30"])[0] or 30)
    return SmtpConfig(
        host=parsed.hostname,
        port=parsed.port or default_port,
        username=unquote(parsed.username or ""),
        password=unquote(parsed.password or ""),
        use_tls=use_tls,
        use_ssl=use_ssl,
        timeout=timeout,
    )


class SmtpTransport:
    """One SMTP connection, reused for every message of a batch; reopened after a connection error."""

    provider_type = "smtp"

    def __init__(self, config: SmtpConfig) -> None:
        self.config = config
        self.conn: smtplib.SMTP | None = None

    def open(self) -> None:
        if self.conn is not None:
            return
        cfg = self.config
        try:
            if cfg.use_ssl:
                conn: smtplib.SMTP = smtplib.SMTP_SSL(
                    cfg.host, cfg.port, timeout=cfg.timeout, context=ssl.create_default_context()
                )
            else:
                conn = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout)
            conn.ehlo()
            if cfg.use_tls:
                conn.starttls(context=ssl.create_default_context())
                conn.ehlo()
            if cfg.username:
                conn.login(cfg.username, cfg.password)
        except smtplib.SMTPAuthenticationError as exc:
            raise DispatchError(AUTH_FAILED, f"SMTP authentication failed: {exc.smtp_code}") from exc
        except smtplib.SMTPResponseException as exc:
            raise DispatchError(
                smtp_error_code(exc.smtp_code), _reply_text(exc.smtp_code, exc.smtp_error)
            ) from exc
        except (OSError, smtplib.SMTPException) as exc:
            raise DispatchError(SERVER_ERROR, f"SMTP connection failed: {exc}") from exc
        self.conn = conn

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            conn.quit()
        except (OSError, smtplib.SMTPException):
            with contextlib.suppress(OSError):
                conn.close()

    def alive(self) -> bool:
        if self.conn is None:
            return False
        try:
            code, _ = self.conn.noop()
        except (OSError, smtplib.SMTPException):
            self._abort()
            return False
        if code != 250:
            self._abort()
            return False
        return True

    def _abort(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    def _reset(self) -> None:
        """After a refusal: RSET so the next message starts clean; drop the connection if that fails."""
        if self.conn is None:
            return
        try:
            code, _ = self.conn.rset()
            if code != 250:
                self._abort()
        except (OSError, smtplib.SMTPException):
            self._abort()

    def send(self, message: OutgoingMessage) -> str:
        wire = signed(message)  # before the transaction starts: an unsignable message never reaches DATA
        self.open()
        conn = self.conn
        assert conn is not None
        sender = message.envelope_from
        recipients = message.recipients
        needs_utf8 = not all(a.isascii() for a in [sender, *recipients])
        try:
            mail_options: list[str] = []
            if needs_utf8:
                if not conn.has_extn("smtputf8"):
                    raise DispatchError(SMTPUTF8_UNSUPPORTED, "The server does not support SMTPUTF8")
                mail_options.append("SMTPUTF8")
            code, reply = conn.mail(sender, mail_options)
            if code != 250:
                self._reset()
                raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
            for rcpt in recipients:
                code, reply = conn.rcpt(rcpt)
                if code not in (250, 251):
                    self._reset()
                    raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
            code, reply = conn.docmd("DATA")
            if code != 354:
                self._reset()
                raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
            payload = _DOT_RE.sub(b"..", wire)  # dot-stuffing (RFC 5321 4.5.2)
            if not payload.endswith(b"\r\n"):
                payload += b"\r\n"
            conn.send(payload + b".\r\n")
        except DispatchError:
            raise
        except (OSError, smtplib.SMTPException) as exc:
            # Before the end of DATA: nothing was accepted (D-08 → SERVER_ERROR, retried).
            self._abort()
            raise DispatchError(SERVER_ERROR, f"SMTP connection error before end of DATA: {exc}") from exc
        try:
            code, reply = conn.getreply()
        except (OSError, smtplib.SMTPException, TimeoutError) as exc:
            # After the end of DATA and before the reply: the server may have accepted it (D-07, D-08).
            self._abort()
            raise DispatchError(
                AMBIGUOUS_TIMEOUT, f"Connection lost after end of DATA: {exc}", on_wire=True
            ) from exc
        if code != 250:
            self._reset()
            raise DispatchError(smtp_error_code(code), _reply_text(code, reply))
        return message.message_id.strip("<>")


def signed(message: OutgoingMessage) -> bytes:
    """The wire bytes with the sending domain's DKIM signature (`owlat.domains.signing`): this path hands mail
    to an SMTP server itself, so it signs; the ESPs of `delivery.providers.esp` sign for us. A domain that should
    sign and cannot fails the send with `DKIM_UNAVAILABLE` and the reason (not retried: the operator must act)."""
    from owlat.domains.signing import SigningUnavailable, dkim_sign

    try:
        return dkim_sign(
            message.as_bytes(), organization_id=message.organization_id, from_email=message.from_email
        )
    except SigningUnavailable as exc:
        raise DispatchError(DKIM_UNAVAILABLE, str(exc)) from exc


_DOT_RE = re.compile(rb"(?m)^\.")


def _reply_text(code: int, reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return f"{code} {text}".strip()
