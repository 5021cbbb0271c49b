"""D-07: the explicit operator re-send of outcome-unknown send rows (the recipient may get it twice)."""

from django.core.management.base import BaseCommand, CommandError

from delivery.models import EmailSend, TransactionalSend
from delivery.services import sends_resend_unknown


class Command(BaseCommand):
    help = "List outcome-unknown send rows; with --apply hand them to their pool again."

    def add_arguments(self, parser):
        parser.add_argument("--kind", choices=["campaign", "transactional", "all"], default="all")
        parser.add_argument("--campaign", help="only rows of this campaign id")
        parser.add_argument("--id", action="append", dest="ids", default=[], help="only these send ids")
        parser.add_argument("--apply", action="store_true", help="re-send (default: list only)")

    def handle(self, *args, **options):
        kinds = ["campaign", "transactional"] if options["kind"] == "all" else [options["kind"]]
        if options["campaign"] and "campaign" not in kinds:
            raise CommandError("--campaign only applies to campaign rows")
        total = 0
        for kind in kinds:
            model = EmailSend if kind == "campaign" else TransactionalSend
            qs = model.objects.filter(status="queued", outcome_unknown=True)
            if options["campaign"]:
                if kind != "campaign":
                    continue
                qs = qs.filter(campaign_id=options["campaign"])
            if options["ids"]:
                qs = qs.filter(pk__in=options["ids"])
            ids = [str(pk) for pk in qs.values_list("pk", flat=True)]
            for pk in ids:
                self.stdout.write(f"{kind} {pk}")
            if options["apply"] and ids:
                count = sends_resend_unknown(kind, ids)
                self.stdout.write(f"{kind}: re-sending {count} row(s)")
            total += len(ids)
        self.stdout.write(
            f"Summary: {total} outcome-unknown row(s)"
            + ("" if options["apply"] else " (list only; use --apply)")
        )
