"""`manage.py automation_transition <automation id> <activate|pause|resume|revert-to-draft>`: an operator-driven
transition through the lifecycle (AUT-13), recorded with an actor tag; `--dry-run` changes nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from automations.lifecycle import PUBLIC_ACTIONS
from automations.services import AutomationInvalid, automation_transition_operator
from owlat.management.arguments import uuid_arg


class Command(BaseCommand):
    help = "Move an automation through its lifecycle (activate, pause, resume, revert-to-draft)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("automation_id", type=uuid_arg)
        parser.add_argument("action", choices=sorted(PUBLIC_ACTIONS))
        parser.add_argument(
            "--actor",
            default="system:operator",
            help="Who is acting, stored in the audit row: a user id or a system:<source> tag (default system:operator).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Show the outcome; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        actor = options["actor"].strip()
        if not actor:
            raise CommandError("--actor must not be empty")
        try:
            outcome = automation_transition_operator(
                automation_id=options["automation_id"],
                verb=options["action"],
                actor=actor,
                dry_run=options["dry_run"],
            )
        except AutomationInvalid as exc:
            raise CommandError(exc.message) from exc
        except ValueError as exc:  # a malformed id
            raise CommandError(f"Invalid automation id: {exc}") from exc
        prefix = "[dry run] " if options["dry_run"] else ""
        if not outcome.ok:
            raise CommandError(f"{prefix}{outcome.message} ({outcome.reason})")
        verb = "would be" if options["dry_run"] else "is"
        self.stdout.write(
            f"{prefix}{outcome.from_state} → {outcome.to_state}: {outcome.applied}; automation {outcome.object_id} "
            f"{verb} {outcome.to_state} (actor {actor})"
        )
