"""An existing mailbox the inbox reads over IMAP (`inbox.imap_poll`), for teams that keep their mailbox.

The password is stored encrypted (`inbox.provider_settings.encrypt_key`, Fernet under a key derived from
`SECRET_KEY`). The cursor is the folder's UIDVALIDITY and the highest UID stored so far: a poll reads only UIDs
above it and moves it past each message once that message is stored, so nothing is read twice or skipped; a
new UIDVALIDITY (the server renumbered the folder) reads the folder again from the start, and the receive
path's Message-ID check keeps what was stored before from being stored twice. The first read starts at the
folder's end unless `read_existing` is set. `poll_lease_until` lets one
poller at a time read a mailbox (the schedule and `run_inbox_imap` may both run)."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from owlat.models import Organization


class ImapSecurity(models.TextChoices):
    SSL = "ssl", "TLS from the start (port 993)"
    STARTTLS = "starttls", "STARTTLS (port 143)"
    NONE = "none", "none (loopback or a trusted network only)"


class ImapMailbox(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="imap_mailboxes")
    name = models.CharField(max_length=100, help_text="A name for this mailbox in the admin, e.g. “Support”.")
    host = models.CharField(max_length=253, help_text="The IMAP server's host name, e.g. imap.example.com.")
    port = models.PositiveIntegerField(
        default=993, validators=[MinValueValidator(1), MaxValueValidator(65535)], help_text="Usually 993."
    )
    security = models.CharField(max_length=16, choices=ImapSecurity.choices, default=ImapSecurity.SSL)
    username = models.CharField(max_length=254, help_text="The login, usually the mailbox's address.")
    password_encrypted = models.TextField(blank=True, default="", editable=False)
    folder = models.CharField(
        max_length=200, default="INBOX", help_text="The folder to read (INBOX by default)."
    )
    read_existing = models.BooleanField(
        default=False,
        help_text="Also read the mail already in the folder when the mailbox is first read. Unticked, only mail "
        "that arrives from then on is read (the agent would otherwise answer old mail).",
    )
    enabled = models.BooleanField(default=True, help_text="Untick to stop reading this mailbox.")
    uidvalidity = models.BigIntegerField(null=True, blank=True, editable=False)
    last_uid = models.BigIntegerField(default=0, editable=False)
    poll_lease_until = models.DateTimeField(null=True, blank=True, editable=False)
    last_polled_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "IMAP mailbox"
        verbose_name_plural = "IMAP mailboxes"
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "host", "username", "folder"], name="inbox_imap_mailbox_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.username} on {self.host})"
