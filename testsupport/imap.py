"""A loopback IMAP server for the tests: pymap's in-memory backend in its own process, one login.

`imap_server` starts it on a free port and yields an `ImapServer`; `deliver` puts a real message into a folder
with IMAP APPEND (as an MTA's delivery agent would), so the inbox reads it the way it reads any mailbox."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from imapclient import IMAPClient

from testsupport.waiting import free_port, wait_until


@dataclass
class ImapServer:
    port: int
    username: str
    password: str
    process: subprocess.Popen

    def client(self) -> IMAPClient:
        client = IMAPClient("127.0.0.1", port=self.port, ssl=False, timeout=10)
        client.login(self.username, self.password)
        return client

    def deliver(self, raw: bytes, folder: str = "INBOX") -> None:
        client = self.client()
        try:
            client.append(folder, raw)
        finally:
            client.logout()


def _reachable(port: int) -> bool:
    try:
        IMAPClient("127.0.0.1", port=port, ssl=False, timeout=2).logout()
    except OSError:
        return False
    return True


@pytest.fixture
def imap_server():
    executable = shutil.which("pymap") or str(Path(sys.executable).with_name("pymap"))
    port = free_port()
    username, password = "support@acme.test", "imap-secret"
    process = subprocess.Popen(
        [executable, "--host", "127.0.0.1", "--port", str(port), "--no-tls", "dict",
         "--demo-user", username, "--demo-password", password],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_until(lambda: process.poll() is not None or _reachable(port), 20, message="pymap did not start")
        if process.poll() is not None:
            raise RuntimeError(f"pymap exited: {process.stderr.read().decode(errors='replace')}")
        yield ImapServer(port=port, username=username, password=password, process=process)
    finally:
        process.terminate()
        process.wait(10)
