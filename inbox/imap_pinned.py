"""An IMAPClient that connects only to addresses the outbound guard approved (`owlat.outbound.connect_addresses`).

A mailbox's host is tenant-entered. Checking its addresses and then letting the IMAP library resolve the name
again would leave a window in which DNS answers differently (rebinding to a private address). So the client
connects to the guard's addresses, in order, and never resolves the host itself; TLS (implicit on 993, or
STARTTLS) still sends the host name as SNI and checks the certificate against the host name, not the address.
"""

from __future__ import annotations

import socket
from typing import Any

from imapclient import IMAPClient, imap4, tls


def _pinned_socket(addresses: list[str], port: int, timeout: float | None) -> socket.socket:
    last: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout=timeout)
        except OSError as exc:
            last = exc
    raise last or OSError("no address to connect to")


class _PinnedPlain(imap4.IMAP4WithTimeout):
    def __init__(self, host: str, port: int, timeout: float | None, addresses: list[str]) -> None:
        self._addresses = addresses
        super().__init__(host, port, timeout)

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        return _pinned_socket(self._addresses, self.port, timeout if timeout is not None else self._timeout)


class _PinnedTLS(tls.IMAP4_TLS):
    def __init__(self, host: str, port: int, ssl_context: Any, timeout: float | None, addresses: list[str]):
        self._addresses = addresses
        super().__init__(host, port, ssl_context, timeout)

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = _pinned_socket(self._addresses, self.port, timeout if timeout is not None else self._timeout)
        context = self.ssl_context or tls.create_default_context()  # verifies the chain and the host name
        return tls.wrap_socket(sock, context, self.host)  # SNI and certificate: the host name


class PinnedIMAPClient(IMAPClient):
    """`IMAPClient(host, …)` whose connection goes to one of `addresses` (the guard's answer for host:port)."""

    def __init__(self, host: str, *, addresses: list[str], **kwargs: Any) -> None:
        self._pinned = list(addresses)
        super().__init__(host, **kwargs)

    def _create_IMAP4(self) -> Any:
        connect_timeout = getattr(self._timeout, "connect", None)
        if self.ssl:
            return _PinnedTLS(self.host, self.port, self.ssl_context, connect_timeout, self._pinned)
        return _PinnedPlain(self.host, self.port, connect_timeout, self._pinned)
