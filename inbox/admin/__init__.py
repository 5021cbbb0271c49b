"""Admin screens of the inbox (D-12): the message screens (`messages`: review queue, quarantine, all messages,
their display in `display` and the retry screens in `retry`), the configuration (`config`), and the circuit
breakers, IMAP mailboxes, model provider and rules (`inbox.admin_*`)."""

from inbox import admin_breakers, admin_imap, admin_provider, admin_rules  # noqa: F401 - their screens
from inbox.admin import config, messages  # noqa: F401 - registered on import
from inbox.admin.messages import VERBS

__all__ = ["VERBS"]
