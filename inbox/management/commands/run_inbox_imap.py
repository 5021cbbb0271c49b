"""Read the organizations' IMAP mailboxes (`inbox.imap_poll`): one thread per enabled mailbox, IDLE where offered."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand
from django.db import connections

from inbox.imap_poll import mailbox_watch, poll_mailbox
from inbox.models import ImapMailbox


def _watch(mailbox_id, stop: threading.Event) -> None:
    try:
        mailbox_watch(mailbox_id, stop)
    finally:
        connections.close_all()


class Command(BaseCommand):
    help = (
        "Read every enabled IMAP mailbox (Inbox → IMAP mailboxes in the admin): new mail goes through the inbox's "
        "receive path. Waits with IDLE where the server offers it, else polls every INBOX_IMAP_POLL_SECONDS. "
        "Runs until SIGINT/SIGTERM; --once polls each mailbox once and exits. Mailboxes added later are picked "
        "up within a minute."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="poll each enabled mailbox once and exit")

    def handle(self, *args, **options):
        mailboxes = ImapMailbox.objects.filter(enabled=True).order_by("pk")
        if options["once"]:
            for mailbox in mailboxes:
                self.stdout.write(f"{mailbox}: {poll_mailbox(mailbox.pk)}")
            return
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        threads: dict[int, threading.Thread] = {}
        self.stdout.write("Inbox IMAP reader started")
        self.stdout.flush()
        while not stop.is_set():
            for pk in ImapMailbox.objects.filter(enabled=True).values_list("pk", flat=True):
                if pk not in threads or not threads[pk].is_alive():
                    threads[pk] = threading.Thread(target=_watch, args=(pk, stop), daemon=True)
                    threads[pk].start()
            connections.close_all()
            stop.wait(60)
        for thread in threads.values():
            thread.join(timeout=10)
        self.stdout.write("Inbox IMAP reader stopped")
