"""`manage.py inbox_transition <message id> <verb>`: an operator review action through the lifecycle (AGT-25)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inbox.operations import VERBS, message_operator_transition


class Command(BaseCommand):
    help = "Apply a review action to an inbound message (approve, reject, archive, release, retry, undo, block-sender)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("message_id")
        parser.add_argument("verb", choices=sorted(VERBS))
        parser.add_argument("--actor", default="system:operator", help="Stored in the audit row.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            outcome = message_operator_transition(
                message_id=options["message_id"], verb=options["verb"], actor=options["actor"]
            )
        except (ValueError, Exception) as exc:
            if isinstance(exc, CommandError):
                raise
            raise CommandError(f"Invalid message id: {exc}") from exc
        if not outcome.ok:
            raise CommandError(f"{outcome.message} ({outcome.reason})")
        self.stdout.write(f"{outcome.from_state} → {outcome.to_state}: message {outcome.object_id}")
