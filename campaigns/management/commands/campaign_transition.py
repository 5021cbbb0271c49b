"""`manage.py campaign_transition CAMPAIGN_ID VERB`: an operator transition through the lifecycle (send,
unschedule, cancel, pause, resume; the review queue's approve/reject; declare-winner), with an actor tag and
`--dry-run`. Cancelling a send is for good: its rows still waiting end `cancelled`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from campaigns.operations import VERBS, campaign_transition_run


class Command(BaseCommand):
    help = "Move a campaign through its lifecycle as an operator."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("campaign_id")
        parser.add_argument("verb", choices=VERBS)
        parser.add_argument("--actor", default="system:operator", help="Actor recorded in the audit log.")
        parser.add_argument("--reason", default="", help="Reason for reject (shown to the organization).")
        parser.add_argument("--winner", choices=["A", "B"], default="", help="For declare-winner.")
        parser.add_argument("--dry-run", action="store_true", help="Show what would happen; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        import uuid

        try:
            campaign_id = uuid.UUID(options["campaign_id"])
        except ValueError as exc:
            raise CommandError("campaign_id: not a campaign id") from exc
        if options["verb"] == "reject" and not options["reason"].strip():
            raise CommandError("reject needs --reason")
        if options["verb"] == "declare-winner" and not options["winner"]:
            raise CommandError("declare-winner needs --winner A|B")
        plan = campaign_transition_run(
            campaign_id=campaign_id,
            verb=options["verb"],
            actor=options["actor"],
            dry_run=options["dry_run"],
            reason=options["reason"],
            winner=options["winner"],
        )
        if options["dry_run"]:
            self.stdout.write("[dry run] " + plan.message)
            return
        if not plan.ok:
            raise CommandError(plan.message)
        self.stdout.write(plan.message)
