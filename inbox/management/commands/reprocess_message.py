"""`manage.py reprocess_message <message id>`: run the agent pipeline again for a failed or unprocessed message."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inbox.operations import message_reprocess


class Command(BaseCommand):
    help = "Run the agent pipeline again for a failed (retry) or received-but-unprocessed message."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("message_id")
        parser.add_argument("--actor", default="system:operator")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = message_reprocess(message_id=options["message_id"], actor=options["actor"])
        except ValueError as exc:
            raise CommandError(f"Invalid message id: {exc}") from exc
        if result.startswith("refused"):
            raise CommandError(result)
        self.stdout.write(result)
