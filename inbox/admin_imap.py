"""Admin form of an IMAP mailbox the inbox reads (`inbox.imap_poll`): server, security picker, login and a
password typed into a password field — stored encrypted, never shown again; leaving it empty keeps it. The
host is checked by the outbound guard when saved; the cursor and the last poll's error are shown read-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from inbox.models import ImapMailbox
from inbox.provider_settings import encrypt_key
from owlat.admin_tenancy import TenantModelAdmin
from owlat.outbound import OutboundRefused, connect_addresses


class ImapMailboxForm(forms.ModelForm):
    password = forms.CharField(
        required=False,
        max_length=1000,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. Leave empty to keep the stored password "
        "(an app password where the provider offers them).",
    )

    class Meta:
        model = ImapMailbox
        fields = (
            "organization",
            "name",
            "host",
            "port",
            "security",
            "username",
            "folder",
            "read_existing",
            "enabled",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        if not data.get("password") and not self.instance.password_encrypted:
            self.add_error("password", "Enter the mailbox's password.")
        host, port = (data.get("host") or "").strip(), data.get("port") or 993
        try:
            connect_addresses(host, port)
        except OutboundRefused as exc:
            self.add_error("host", f"{exc}: enter the IMAP server's public host name.")
        return data

    def save(self, commit: bool = True) -> ImapMailbox:
        if self.cleaned_data.get("password"):
            self.instance.password_encrypted = encrypt_key(self.cleaned_data["password"])
        return super().save(commit=commit)


@admin.register(ImapMailbox)
class ImapMailboxAdmin(TenantModelAdmin):
    manage_permission = "organization:manage"
    form = ImapMailboxForm
    list_display = ("name", "organization", "username", "host", "enabled", "last_polled_at", "last_error")
    fields = (
        "organization", "name", "host", "port", "security", "username", "password", "folder", "read_existing", "enabled",
        "cursor", "last_polled_at", "last_error",
    )  # fmt: skip
    readonly_fields = ("cursor", "last_polled_at", "last_error")

    @admin.display(description="read up to")
    def cursor(self, obj: ImapMailbox) -> str:
        if obj.uidvalidity is None:
            return "not read yet"
        return f"UID {obj.last_uid} (UIDVALIDITY {obj.uidvalidity})"
