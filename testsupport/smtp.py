"""A real SMTP server (aiosmtpd) on loopback with fault injection, and its `smtp_sink` fixture."""

from __future__ import annotations

import asyncio
import dataclasses
import email
import email.policy
import threading
import time
from collections.abc import Iterable
from email.message import EmailMessage

import pytest

from testsupport.waiting import free_port

# ==========================================================================================================
# SMTP sink (aiosmtpd) with fault injection
# ==========================================================================================================

#: Reactions understood by `SmtpSink.reply_script` / `SmtpSink.script_for()` (one is consumed per message,
#: i.e. per SMTP transaction):
#:   "ok"               accept (250) — also what happens when the script is empty
#:   "451"              accept RCPT, answer `451 4.7.1 Try again later` at the end of DATA
#:   "550"              reject every RCPT with `550 5.1.1 No such user`
#:   "drop_after_data"  read the whole DATA body, then close the connection without any reply (D-08
#:                      AMBIGUOUS_TIMEOUT: the client sees a disconnect, not a reply)
#:   "drop_before_data" close the connection at RCPT, before DATA (a connection error before the end of DATA)
#:   "data:<reply>"     answer `<reply>` at the end of DATA, e.g. "data:552 5.3.4 Message too big"
#:   "rcpt:<reply>"     answer `<reply>` to every RCPT, e.g. "rcpt:452 4.5.3 Too many recipients"
#:   "delay:<seconds>"  wait that long at the end of DATA, then accept (for client timeouts)
SMTP_REACTIONS = ("ok", "451", "550", "drop_after_data", "drop_before_data")
_DATA_451 = "451 4.7.1 Try again later"
_RCPT_550 = "550 5.1.1 No such user"


class ReceivedMessage(EmailMessage):
    """A message the sink accepted: a parsed `EmailMessage` (headers, `get_body()`, ...) plus the envelope.

    Extra attributes: `mail_from` (envelope sender), `rcpt_tos` (envelope recipients), `raw` (bytes as received),
    `received_at` (monotonic time).
    """

    mail_from: str = ""
    rcpt_tos: list[str]
    raw: bytes = b""
    received_at: float = 0.0

    def text(self) -> str:
        """The text/plain body (or the only body) as a string, '' if there is none."""
        part = self.get_body(preferencelist=("plain",))
        return part.get_content() if part is not None else ""

    def html(self) -> str:
        part = self.get_body(preferencelist=("html",))
        return part.get_content() if part is not None else ""


def parse_message(raw: bytes) -> ReceivedMessage:
    return email.message_from_bytes(raw, _class=ReceivedMessage, policy=email.policy.default)  # type: ignore[return-value]


@dataclasses.dataclass
class SmtpAttempt:
    """One SMTP transaction the sink saw, whatever its outcome (accepted or not)."""

    reaction: str
    mail_from: str
    rcpt_tos: list[str]
    raw: bytes | None  # None when the transaction ended before DATA
    outcome: (
        str  # "accepted" | "rejected_rcpt" | "rejected_data" | "dropped_after_data" | "dropped_before_data"
    )


class _SinkHandler:
    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        envelope.owlat_reaction = None  # decided at the first RCPT (per-recipient scripts need the address)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        reaction = getattr(envelope, "owlat_reaction", None)
        if reaction is None:
            reaction = self.sink._next_reaction(address)
            envelope.owlat_reaction = reaction
        if reaction == "550" or reaction.startswith("rcpt:"):
            reply = _RCPT_550 if reaction == "550" else reaction[len("rcpt:") :]
            self.sink._record(SmtpAttempt(reaction, envelope.mail_from, [address], None, "rejected_rcpt"))
            return reply
        if reaction == "drop_before_data":
            self.sink._record(
                SmtpAttempt(
                    reaction, envelope.mail_from, [*envelope.rcpt_tos, address], None, "dropped_before_data"
                )
            )
            await _drop(server)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        reaction = getattr(envelope, "owlat_reaction", None) or "ok"
        raw = envelope.original_content or b""
        rcpts = list(envelope.rcpt_tos)
        if reaction == "drop_after_data":
            self.sink._record(SmtpAttempt(reaction, envelope.mail_from, rcpts, raw, "dropped_after_data"))
            await _drop(server)
        if reaction == "451" or reaction.startswith("data:"):
            self.sink._record(SmtpAttempt(reaction, envelope.mail_from, rcpts, raw, "rejected_data"))
            return _DATA_451 if reaction == "451" else reaction[len("data:") :]
        if reaction.startswith("delay:"):
            await asyncio.sleep(float(reaction[len("delay:") :]))
        self.sink._accept(envelope.mail_from, rcpts, raw, reaction)
        return "250 OK: queued"


async def _drop(server) -> None:
    """Close the client connection without replying; aiosmtpd cancels the session coroutine (we never return)."""
    server.transport.abort()
    while True:  # connection_lost() cancels this coroutine on the next loop iteration
        await asyncio.sleep(0.01)


class SmtpSink:
    """A real SMTP server on 127.0.0.1 (aiosmtpd `Controller`) that records what it receives.

    - `messages`: accepted messages (`ReceivedMessage`: parsed EmailMessage + `mail_from`, `rcpt_tos`, `raw`)
    - `attempts`: every transaction (`SmtpAttempt`), including rejected and dropped ones
    - `reply_script`: list of reactions consumed one per message (see `SMTP_REACTIONS`); empty = accept
    - `script_for(rcpt, reactions)`: reactions for transactions whose first recipient is `rcpt`; they take
      precedence over `reply_script` (useful when send order is not deterministic)
    - `wait_for(n, timeout)`, `count_for(rcpt)`, `messages_for(rcpt)`, `clear()`
    """

    def __init__(self, host: str = "127.0.0.1", port: int | None = None, *, parse: bool = True) -> None:
        self.host = host
        # False (the benchmarks): accepted messages keep only the envelope, `raw` and `received_at`, not parsed
        # — parsing costs ~1.3 ms of CPU per message in the sink's event loop, a ceiling on what a benchmark
        # running the sink in its own process can measure (issue 12: ~150-190 mails/s)
        self.parse = parse
        self.port = port or free_port()
        self.messages: list[ReceivedMessage] = []
        self.attempts: list[SmtpAttempt] = []
        self.reply_script: list[str] = []
        self._per_rcpt: dict[str, list[str]] = {}
        self._cond = threading.Condition()
        self._controller = None

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> SmtpSink:
        from aiosmtpd.controller import Controller

        self._controller = Controller(
            _SinkHandler(self),
            hostname=self.host,
            port=self.port,
            ready_timeout=10.0,
            auth_require_tls=False,
            authenticator=_accept_any_login,
            data_size_limit=50 * 1024 * 1024,
        )
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    @property
    def url(self) -> str:
        """The `EMAIL_URL` (D-09) pointing at this sink."""
        return f"smtp://{self.host}:{self.port}"

    # -- scripting ----------------------------------------------------------------------------------------
    def script_for(self, rcpt: str, reactions: Iterable[str]) -> None:
        with self._cond:
            self._per_rcpt.setdefault(rcpt.lower(), []).extend(_check_reactions(reactions))

    def _next_reaction(self, first_rcpt: str) -> str:
        with self._cond:
            queue = self._per_rcpt.get(first_rcpt.lower())
            if queue:
                return queue.pop(0)
            if self.reply_script:
                reaction = self.reply_script.pop(0)
                _check_reactions([reaction])
                return reaction
            return "ok"

    # -- recording ----------------------------------------------------------------------------------------
    def _record(self, attempt: SmtpAttempt) -> None:
        with self._cond:
            self.attempts.append(attempt)
            self._cond.notify_all()

    def _accept(self, mail_from: str, rcpts: list[str], raw: bytes, reaction: str) -> None:
        msg = parse_message(raw) if self.parse else ReceivedMessage()
        msg.mail_from = mail_from
        msg.rcpt_tos = rcpts
        msg.raw = raw
        msg.received_at = time.monotonic()
        with self._cond:
            self.messages.append(msg)
            self.attempts.append(SmtpAttempt(reaction, mail_from, rcpts, raw, "accepted"))
            self._cond.notify_all()

    # -- queries ------------------------------------------------------------------------------------------
    def wait_for(self, n: int, timeout: float = 10.0) -> list[ReceivedMessage]:
        """Block until at least `n` messages were accepted; returns `messages`. AssertionError on timeout."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.messages) >= n, timeout=timeout)
            if not ok:
                raise AssertionError(
                    f"SMTP sink: expected {n} message(s) within {timeout:.1f}s, got {len(self.messages)} "
                    f"(attempts: {[(a.outcome, a.rcpt_tos) for a in self.attempts]})"
                )
            return list(self.messages)

    def wait_for_attempts(self, n: int, timeout: float = 10.0) -> list[SmtpAttempt]:
        """Block until at least `n` transactions (of any outcome) were seen."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.attempts) >= n, timeout=timeout)
            if not ok:
                raise AssertionError(f"SMTP sink: expected {n} attempt(s), got {len(self.attempts)}")
            return list(self.attempts)

    def messages_for(self, rcpt: str) -> list[ReceivedMessage]:
        rcpt = rcpt.lower()
        with self._cond:
            return [m for m in self.messages if rcpt in (r.lower() for r in m.rcpt_tos)]

    def count_for(self, rcpt: str) -> int:
        """How many accepted messages had `rcpt` among their envelope recipients."""
        return len(self.messages_for(rcpt))

    def clear(self) -> None:
        with self._cond:
            self.messages.clear()
            self.attempts.clear()
            self.reply_script.clear()
            self._per_rcpt.clear()


def _accept_any_login(server, session, envelope, mechanism, auth_data):
    from aiosmtpd.smtp import AuthResult

    return AuthResult(success=True)


def _check_reactions(reactions: Iterable[str]) -> list[str]:
    out = list(reactions)
    for r in out:
        if r in SMTP_REACTIONS or r.startswith(("data:", "rcpt:", "delay:")):
            continue
        raise ValueError(f"unknown SMTP sink reaction {r!r}; known: {SMTP_REACTIONS} or data:/rcpt:/delay:")
    return out


@pytest.fixture
def smtp_sink(settings):
    """A loopback SMTP server; sets `EMAIL_PROVIDER="smtp"` and `EMAIL_URL` (also passed to `workers`)."""
    sink = SmtpSink().start()
    settings.EMAIL_PROVIDER = "smtp"
    settings.EMAIL_URL = sink.url
    try:
        yield sink
    finally:
        sink.stop()
