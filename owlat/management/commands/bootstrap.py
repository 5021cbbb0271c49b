"""`manage.py bootstrap [--demo]`: the demo organization, a superuser owner and an API key (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from owlat.demo import bootstrap, bootstrap_report


class Command(BaseCommand):
    help = (
        "Create (or find) the 'Demo' organization with a verified sender domain, a superuser owner and an API "
        "key with every scope; --demo adds sample contacts, topics and a segment. Safe to re-run."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--username", default="admin", help="Superuser to create or find (default: admin)."
        )
        parser.add_argument(
            "--password", default=None, help="Set this password (default: generate one for a new user)."
        )
        parser.add_argument(
            "--demo", action="store_true", help="Also create sample contacts, topics, a segment."
        )
        parser.add_argument(
            "--credentials-file",
            default=None,
            help="Keep the generated password and API key in this file (mode 0600) and show them again on "
            "later runs while they still work (used by `make run`).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        result = bootstrap(
            username=options["username"],
            password=options["password"],
            demo=options["demo"],
            credentials_file=options["credentials_file"],
        )
        self.stdout.write(bootstrap_report(result, credentials_file=options["credentials_file"]))
