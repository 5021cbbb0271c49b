"""D-07: report expired claims, lost hand-offs and expired unknown outcomes; `--apply` resolves them."""

from django.core.management.base import BaseCommand

from delivery.reaper import reap_stuck_sends


class Command(BaseCommand):
    help = (
        "Report stuck send rows (D-07); with --apply re-drive orphans, flag lost hand-offs, expire unknowns."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--apply", action="store_true", help="resolve what is reported (default: dry run)"
        )
        parser.add_argument("--limit", type=int, default=1000)

    def handle(self, *args, **options):
        report = reap_stuck_sends(apply=options["apply"], limit=options["limit"])
        for kind in ("campaign", "transactional"):
            self.stdout.write(
                f"{kind}: {len(report.orphans[kind])} orphaned (never handed off; re-driven), "
                f"{len(report.lost_hand_offs[kind])} handed off without result (flagged outcome-unknown), "
                f"{len(report.expired_unknown[kind])} outcome-unknown for 24 h (failed PROVIDER_ACCEPTANCE_UNCONFIRMED)"
            )
        verb = "applied" if options["apply"] else "dry run; use --apply to resolve"
        self.stdout.write(f"Summary: {report.counts()} ({verb})")
