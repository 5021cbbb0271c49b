"""`manage.py verify_domains [--organization <id|name>] [--domain <name>]`: check sending domains against DNS now
(DOM-12), print each change of state and every stale-verification warning (the cron re-check runs the
same code every 6 hours)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from owlat.management.arguments import domain_arg
from owlat.models import Domain, Organization


class Command(BaseCommand):
    help = "Check sending domains' DNS records now and update their verification status."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--organization", help="Organization id or exact name (default: every organization)."
        )
        parser.add_argument("--domain", type=domain_arg, help="Only this domain name, e.g. mail.example.com.")

    def handle(self, *args: Any, **options: Any) -> None:
        from owlat.domains.verification import domains_recheck
        from owlat.imports import resolve_organization

        qs = Domain.objects.all()
        if options["organization"]:
            try:
                org = resolve_organization(options["organization"])
            except (Organization.DoesNotExist, ValueError) as exc:
                raise CommandError(str(exc)) from None
            qs = qs.filter(organization_id=org.pk)
        if options["domain"]:
            qs = qs.filter(domain__iexact=options["domain"])
            if not qs.exists():
                raise CommandError(
                    f'No sending domain "{options["domain"]}"; add it in Settings > Domains first.'
                )
        summary = domains_recheck(qs, actor="system:verify_domains")
        for line in summary.lines():
            self.stdout.write(line)
