"""The `local` provider (D-09): every message stored as a `LocalMessage` row for the admin."""

from __future__ import annotations

from delivery.messages import OutgoingMessage


class LocalTransport:
    """`local` (D-09): stores each message for viewing in the admin; never leaves the machine."""

    provider_type = "local"

    def open(self) -> None:
        return None

    def close(self) -> None:
        return None

    def send(self, message: OutgoingMessage) -> str:
        from delivery.models import LocalMessage

        LocalMessage.objects.create(
            organization_id=message.organization_id,
            send_kind=message.send_kind or "",
            send_id=message.send_id,
            message_id=message.message_id,
            from_email=message.from_header,
            to=", ".join(message.recipients),
            subject=message.subject,
            html=message.html or "",
            text=message.text or "",
            headers=dict(message.headers),
            raw=message.as_bytes().decode("utf-8", "replace"),
        )
        return message.message_id.strip("<>")
