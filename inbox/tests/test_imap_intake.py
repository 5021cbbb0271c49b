"""IMAP polling of an existing mailbox (inbox.imap_poll): real mail delivered to a loopback IMAP server (pymap)
is read once, in UID order, through the receive path, and reaches `draft_ready`; the cursor (UIDVALIDITY + last
UID) never reads a message twice nor skips one; the password is stored encrypted; the admin form has no JSON."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from inbox.models import ImapMailbox, ImapSecurity, InboundMessage
from inbox.provider_settings import encrypt_key
from testsupport.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def raw_mail(n: int, body: str = "Hello, where can I download my invoice?") -> bytes:
    return (
        f"From: Jane Doe <jane@example.com>\r\nTo: support@acme.test\r\nSubject: Where is my invoice? {n}\r\n"
        f"Message-ID: <imap-{n}@example.com>\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\n"
        "Authentication-Results: mx.acme.test; dmarc=pass header.from=example.com\r\n"
        f"Content-Type: text/plain\r\n\r\n{body}\r\n"
    ).encode()


@pytest.fixture
def mailbox(ai_org, imap_server, settings):
    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    return ImapMailbox.objects.create(
        organization=ai_org,
        name="Support",
        host="127.0.0.1",
        port=imap_server.port,
        security=ImapSecurity.NONE,
        username=imap_server.username,
        password_encrypted=encrypt_key(imap_server.password),
    )


def stored_ids() -> list[str]:
    return sorted(InboundMessage.objects.values_list("message_id", flat=True))


def test_mail_in_an_imap_mailbox_reaches_draft_ready_through_run_inbox_imap(
    mailbox,
    imap_server,
    llm_server,
    run_pipeline,
):
    from testsupport import BASE_DIR
    from testsupport.workers import worker_environment

    env = worker_environment({"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1", "INBOX_AUTHSERV_ID": "mx.acme.test"})
    once = [sys.executable, "manage.py", "run_inbox_imap", "--once"]
    first = subprocess.run(once, cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    imap_server.deliver(raw_mail(1))
    second = subprocess.run(once, cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60)
    assert "received 1" in second.stdout, second.stdout + second.stderr
    run_pipeline()
    m = InboundMessage.objects.get(message_id="<imap-1@example.com>")
    assert m.processing_status == "draft_ready" and m.sender_authenticated
    assert m.headers["x-owlat-intake"] == "imap"
    client = imap_server.client()
    client.select_folder("INBOX", readonly=True)
    assert client.search(["UNSEEN"]), "the team's own mailbox keeps the message unread"
    client.logout()


def test_the_cursor_reads_each_message_once_and_skips_none(mailbox, imap_server):
    from inbox.imap_poll import poll_mailbox

    imap_server.deliver(raw_mail(0))  # already in the folder before the mailbox was connected
    assert poll_mailbox(mailbox.pk).received == 0
    for n in (1, 2):
        imap_server.deliver(raw_mail(n))
    assert poll_mailbox(mailbox.pk).received == 2
    assert poll_mailbox(mailbox.pk).received == 0
    imap_server.deliver(raw_mail(3))
    result = poll_mailbox(mailbox.pk)
    assert (result.received, result.duplicates, result.error) == (1, 0, "")
    assert stored_ids() == [f"<imap-{n}@example.com>" for n in (1, 2, 3)]
    mailbox.refresh_from_db()
    assert mailbox.last_uid > 0 and mailbox.uidvalidity and mailbox.poll_lease_until is None


def test_a_new_uidvalidity_reads_the_folder_again_without_storing_twice(mailbox, imap_server):
    from inbox.imap_poll import poll_mailbox

    poll_mailbox(mailbox.pk)
    imap_server.deliver(raw_mail(1))
    assert poll_mailbox(mailbox.pk).received == 1
    ImapMailbox.objects.filter(pk=mailbox.pk).update(uidvalidity=1, last_uid=10**9)  # renumbered folder
    imap_server.deliver(raw_mail(2))
    result = poll_mailbox(mailbox.pk)
    assert (result.received, result.duplicates) == (1, 1)
    assert stored_ids() == ["<imap-1@example.com>", "<imap-2@example.com>"]


def test_a_wrong_password_is_reported_and_the_cursor_stays(mailbox, imap_server):
    from inbox.imap_poll import poll_mailbox

    ImapMailbox.objects.filter(pk=mailbox.pk).update(password_encrypted=encrypt_key("wrong"))
    result = poll_mailbox(mailbox.pk)
    mailbox.refresh_from_db()
    assert "Cannot log in" in result.error and mailbox.last_error == result.error
    assert mailbox.uidvalidity is None and mailbox.poll_lease_until is None


def test_a_mailbox_another_poller_holds_is_not_read(mailbox, imap_server):
    from inbox.imap_poll import mailbox_claim, poll_mailbox

    assert mailbox_claim(mailbox.pk) is not None
    assert poll_mailbox(mailbox.pk).skipped


def test_idle_reads_new_mail_as_it_arrives(mailbox, imap_server, settings):
    from django.db import connections

    from inbox.imap_poll import mailbox_watch

    def watch(stop):
        try:
            mailbox_watch(mailbox.pk, stop)
        finally:
            connections.close_all()

    settings.INBOX_IMAP_POLL_SECONDS = 30  # longer than the test: only IDLE can bring the mail in time
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,), daemon=True)
    watcher.start()
    try:
        wait_until(lambda: ImapMailbox.objects.get(pk=mailbox.pk).uidvalidity, 10)
        imap_server.deliver(raw_mail(7))
        wait_until(lambda: InboundMessage.objects.filter(message_id="<imap-7@example.com>").exists(), 10)
    finally:
        stop.set()
        watcher.join(40)


def test_the_admin_form_stores_the_password_encrypted_and_refuses_private_hosts(ai_org, settings):
    from inbox.admin_imap import ImapMailboxForm

    data = {"organization": ai_org.pk, "name": "Support", "host": "10.0.0.5", "port": 993, "security": "ssl",
            "username": "support@acme.test", "password": "pw", "folder": "INBOX", "enabled": True}  # fmt: skip
    form = ImapMailboxForm(data=data)
    assert not form.is_valid() and "not a public address" in form.errors["host"][0]
    settings.OUTBOUND_ALLOWED_HOSTS = ["10.0.0.5"]
    form = ImapMailboxForm(data=data)
    assert form.is_valid(), form.errors
    saved = form.save()
    assert saved.password_encrypted and "pw" not in saved.password_encrypted
    edit = ImapMailboxForm(data={**data, "password": ""}, instance=saved)
    assert edit.is_valid() and edit.save().password_encrypted == saved.password_encrypted
