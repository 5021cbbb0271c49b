"""Send a test email (kind `test`) through the configured provider."""

from django.core.management.base import BaseCommand, CommandError

from delivery.services import test_email_send
from owlat.management.arguments import email_arg, uuid_arg
from owlat.models import Organization


class Command(BaseCommand):
    help = "Send a test email to an address through the configured delivery provider."

    def add_arguments(self, parser):
        parser.add_argument("to", type=email_arg, help="recipient address")
        parser.add_argument("--organization", help="organization id or name (default: the only one)")
        parser.add_argument("--template", type=uuid_arg, help="email template id")
        parser.add_argument("--transactional", help="transactional email slug")
        parser.add_argument("--contact", type=uuid_arg, help="contact id used for personalization")
        parser.add_argument("--language")
        parser.add_argument("--subject", default=None)
        parser.add_argument("--now", action="store_true", help="dispatch in this process instead of the pool")

    def handle(self, *args, **options):
        org = self._organization(options["organization"])
        tx_id = None
        if options["transactional"]:
            from templates.models import TransactionalEmail

            tx = TransactionalEmail.objects.filter(organization=org, slug=options["transactional"]).first()
            if tx is None:
                raise CommandError(f"No transactional email {options['transactional']!r}")
            tx_id = tx.pk
        html = None
        if not options["template"] and not tx_id:
            html = "<p>This is a test email from Owlat. Delivery works.</p>"
        try:
            send = test_email_send(
                organization_id=org.pk,
                to=options["to"],
                email_template_id=options["template"],
                transactional_email_id=tx_id,
                contact_id=options["contact"],
                language=options["language"],
                subject=options["subject"] or ("Owlat test email" if html else None),
                html=html,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Queued test send {send.pk} to {send.email}")
        if options["now"]:
            from delivery.worker import dispatch_batch

            summary = dispatch_batch("transactional", [str(send.pk)])
            send.refresh_from_db()
            self.stdout.write(f"{summary}; status {send.status} {send.error_code or ''}".rstrip())

    def _organization(self, value):
        if value:
            org = Organization.objects.filter(name=value).first()
            if org is None:
                try:
                    org = Organization.objects.filter(pk=value).first()
                except Exception:  # not a uuid
                    org = None
            if org is None:
                raise CommandError(f"No organization {value!r}")
            return org
        orgs = list(Organization.objects.all()[:2])
        if len(orgs) != 1:
            raise CommandError("Give --organization (there is not exactly one organization)")
        return orgs[0]
