"""Inbound mail read from an existing IMAP mailbox (`ImapMailbox`), with IMAPClient.

A poll claims the mailbox's lease (one poller at a time, on both databases a compare-and-set `UPDATE`), selects
the folder read-only, and reads the UIDs above the cursor with `BODY.PEEK[]`, so the mailbox's own flags stay as
the team left them. Each message goes through the one receive path (`parse_raw` → `message_receive`); the cursor
moves past a message only once it is stored (or once it can never be: too large, no Message-ID), so a crash
re-reads at most the message in hand and the Message-ID check stores it once. A new UIDVALIDITY starts the
cursor again from zero. A failure (login, network, database) is kept in `last_error` and the cursor stays.

`mailbox_watch` keeps one connection open and waits with IDLE where the server offers it (else it polls every
`INBOX_IMAP_POLL_SECONDS`); the django-q2 schedule polls every enabled mailbox each minute for installs that
do not run `run_inbox_imap`. The host is tenant-entered, so it passes the outbound guard before connecting.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from inbox.imap_pinned import PinnedIMAPClient
from inbox.models import ImapMailbox, ImapSecurity
from inbox.provider_settings import decrypt_key
from owlat.outbound import OutboundRefused, connect_addresses

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 30


@dataclass
class PollResult:
    received: int = 0
    duplicates: int = 0
    refused: int = 0
    error: str = ""
    skipped: bool = False  # another poller holds the lease, or the mailbox is disabled

    def __str__(self) -> str:
        if self.skipped:
            return "not polled: disabled, or another poller is reading it"
        text = f"received {self.received}, duplicates {self.duplicates}, refused {self.refused}"
        return f"{text}; error: {self.error}" if self.error else text


class MailboxUnavailable(Exception):
    """The mailbox cannot be read now; the message says what the operator can do."""


def mailbox_claim(mailbox_id: Any) -> ImapMailbox | None:
    """The mailbox with its lease taken by this poller, or None (disabled, gone, or another poller has it)."""
    now = timezone.now()
    lease = dt.timedelta(seconds=settings.INBOX_IMAP_LEASE_SECONDS)
    claimed = (
        ImapMailbox.objects.filter(pk=mailbox_id, enabled=True)
        .filter(Q(poll_lease_until__isnull=True) | Q(poll_lease_until__lt=now))
        .update(poll_lease_until=now + lease)
    )
    return ImapMailbox.objects.filter(pk=mailbox_id).first() if claimed else None


def _release(mailbox: ImapMailbox, error: str) -> None:
    ImapMailbox.objects.filter(pk=mailbox.pk).update(
        poll_lease_until=None, last_polled_at=timezone.now(), last_error=error[:1000]
    )


def connect(mailbox: ImapMailbox) -> IMAPClient:
    """A logged-in client for the mailbox, else MailboxUnavailable saying why."""
    password = decrypt_key(mailbox.password_encrypted)
    if not password:
        raise MailboxUnavailable("The stored password cannot be read: enter the mailbox's password again.")
    try:
        addresses = connect_addresses(mailbox.host, mailbox.port)
    except OutboundRefused as exc:
        raise MailboxUnavailable(
            f"{exc}: use the IMAP server's public host name (or add it to OUTBOUND_ALLOWED_HOSTS)."
        ) from exc
    try:
        client = PinnedIMAPClient(
            mailbox.host,
            addresses=addresses,
            port=mailbox.port,
            ssl=mailbox.security == ImapSecurity.SSL,
            timeout=CONNECT_TIMEOUT_SECONDS,
        )
        if mailbox.security == ImapSecurity.STARTTLS:
            client.starttls()
        client.login(mailbox.username, password)
    except (IMAPClientError, OSError) as exc:
        raise MailboxUnavailable(f"Cannot log in to {mailbox.host}:{mailbox.port}: {exc}") from exc
    return client


def _receive(mailbox: ImapMailbox, raw: bytes, result: PollResult) -> None:
    from inbox.receive import InvalidMessage, MessageTooLarge, message_receive, parse_raw

    try:
        parsed = parse_raw(raw)
        parsed.headers.setdefault("x-owlat-intake", "imap")
        stored = message_receive(organization_id=mailbox.organization_id, parsed=parsed, actor="system:imap")
    except (MessageTooLarge, InvalidMessage) as exc:
        result.refused += 1
        logger.warning("IMAP mailbox %s: a message was not stored: %s", mailbox.pk, exc)
        return
    if stored.created:
        result.received += 1
    else:
        result.duplicates += 1


def read_new(mailbox: ImapMailbox, client: IMAPClient) -> PollResult:
    """Store the folder's messages above the cursor (at most INBOX_IMAP_BATCH); the cursor follows each one."""
    result = PollResult()
    info = client.select_folder(mailbox.folder, readonly=True)
    uidvalidity = int(info[b"UIDVALIDITY"])
    if mailbox.uidvalidity != uidvalidity:
        start = 0
        if mailbox.uidvalidity is None and not mailbox.read_existing:  # first read: from the folder's end
            start = max(client.search(["ALL"]), default=0)  # IMAPClient searches by UID
        mailbox.uidvalidity, mailbox.last_uid = uidvalidity, start
        ImapMailbox.objects.filter(pk=mailbox.pk).update(uidvalidity=uidvalidity, last_uid=start)
        if start:
            return result
    # "N:*" always names the folder's last message, even below N: keep only UIDs above the cursor
    uids = sorted(u for u in client.search(["UID", f"{mailbox.last_uid + 1}:*"]) if u > mailbox.last_uid)
    uids = uids[: settings.INBOX_IMAP_BATCH]
    sizes = client.fetch(uids, ["RFC822.SIZE"]) if uids else {}
    for uid in uids:
        if sizes.get(uid, {}).get(b"RFC822.SIZE", 0) > settings.INBOX_MAX_MESSAGE_BYTES:
            result.refused += 1
            logger.warning("IMAP mailbox %s: UID %s is larger than INBOX_MAX_MESSAGE_BYTES", mailbox.pk, uid)
        else:
            raw = client.fetch([uid], ["BODY.PEEK[]"]).get(uid, {}).get(b"BODY[]")
            if raw is not None:  # expunged meanwhile: nothing left to read
                _receive(mailbox, raw, result)
        ImapMailbox.objects.filter(pk=mailbox.pk, uidvalidity=uidvalidity).update(last_uid=uid)
        mailbox.last_uid = uid
    return result


def poll_mailbox(mailbox_id: Any, client: IMAPClient | None = None) -> PollResult:
    """One poll of the mailbox (connecting unless `client` is given); nothing when another poller has it."""
    mailbox = mailbox_claim(mailbox_id)
    if mailbox is None:
        return PollResult(skipped=True)
    own = client is None
    try:
        if own:
            client = connect(mailbox)
        result = read_new(mailbox, client)
    except MailboxUnavailable as exc:
        result = PollResult(error=str(exc))
    except (IMAPClientError, OSError) as exc:
        result = PollResult(error=f"The IMAP session failed ({exc}); the next poll tries again.")
    finally:
        if own and client is not None:
            _logout(client)
    _release(mailbox, result.error)
    return result


def _logout(client: IMAPClient) -> None:
    with contextlib.suppress(IMAPClientError, OSError):
        client.logout()


def poll_enabled_mailboxes() -> str:
    results = [
        f"{pk}: {poll_mailbox(pk)}"
        for pk in ImapMailbox.objects.filter(enabled=True).values_list("pk", flat=True)
    ]
    return "; ".join(results) or "no IMAP mailboxes"


def _wait_for_mail(client: IMAPClient, stop: threading.Event) -> None:
    """Until the server reports a change (IDLE) or the poll interval passes, whichever is sooner."""
    interval = settings.INBOX_IMAP_POLL_SECONDS
    if b"IDLE" not in client.capabilities():
        stop.wait(interval)
        return
    client.idle()
    try:
        client.idle_check(timeout=min(interval, settings.INBOX_IMAP_IDLE_SECONDS))
    finally:
        client.idle_done()


def mailbox_watch(mailbox_id: Any, stop: threading.Event) -> None:
    """Read the mailbox until `stop` is set: poll, then wait with IDLE (or the poll interval); reconnect on error."""
    while not stop.is_set():
        mailbox = ImapMailbox.objects.filter(pk=mailbox_id, enabled=True).first()
        if mailbox is None:
            return
        try:
            client = connect(mailbox)
        except MailboxUnavailable as exc:
            ImapMailbox.objects.filter(pk=mailbox_id).update(last_error=str(exc)[:1000])
            stop.wait(settings.INBOX_IMAP_POLL_SECONDS)
            continue
        try:
            while not stop.is_set():
                result = poll_mailbox(mailbox_id, client)
                if result.error:
                    break
                _wait_for_mail(client, stop)
        except (IMAPClientError, OSError) as exc:
            logger.warning("IMAP mailbox %s: connection lost (%s); reconnecting", mailbox_id, exc)
        finally:
            _logout(client)
        stop.wait(1.0)
