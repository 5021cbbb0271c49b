"""`manage.py import_contacts --organization <id|name> FILE.csv [--topic <id>] [--mode upsert|merge]
[--batch-size 1000] [--dry-run]`: validate every row, import the good ones in batches (owlat.imports)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from owlat.imports import (
    DEFAULT_BATCH_SIZE,
    MODES,
    ImportFileError,
    contact_import_run,
    contact_import_validate,
    open_csv,
    resolve_organization,
    resolve_topic,
)
from owlat.models import Organization, Topic

MAX_ERRORS_SHOWN = 200


class Command(BaseCommand):
    help = "Import contacts from a CSV file (columns: email, first_name, last_name, language, timezone, custom…)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", help="CSV file (UTF-8) with a header row.")
        parser.add_argument("--organization", required=True, help="Organization id or exact name.")
        parser.add_argument("--topic", help="Subscribe every imported contact to this topic (id or name).")
        parser.add_argument(
            "--skip-doi",
            action="store_true",
            help="With --topic: consent is attested, do not start double opt-in.",
        )
        parser.add_argument("--mode", choices=MODES, default="upsert")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
        parser.add_argument("--dry-run", action="store_true", help="Validate and count; write nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        try:
            organization = resolve_organization(options["organization"])
        except (Organization.DoesNotExist, ValueError) as exc:
            raise CommandError(str(exc))
        topic = None
        if options.get("topic"):
            try:
                topic = resolve_topic(organization, options["topic"])
            except Topic.DoesNotExist as exc:
                raise CommandError(str(exc))
        try:
            with open_csv(options["file"]) as handle:
                validation = contact_import_validate(handle)
        except ImportFileError as exc:
            raise CommandError(str(exc))

        for problem in validation.errors[:MAX_ERRORS_SHOWN]:
            self.stderr.write(f"error {problem}")
        if len(validation.errors) > MAX_ERRORS_SHOWN:
            self.stderr.write(f"… and {len(validation.errors) - MAX_ERRORS_SHOWN} more errors")
        for duplicate in validation.duplicates[:MAX_ERRORS_SHOWN]:
            self.stderr.write(f"skipped {duplicate}")

        bar = tqdm(
            total=len(validation.rows),
            unit="row",
            desc="Importing" if not options["dry_run"] else "Dry run",
            file=sys.stderr,
            disable=None,  # only on a terminal
        )
        try:
            summary = contact_import_run(
                organization_id=organization.pk,
                validation=validation,
                mode=options["mode"],
                topic=topic,
                skip_doi=options["skip_doi"],
                batch_size=options["batch_size"],
                dry_run=options["dry_run"],
                file_name=Path(options["file"]).name,
                progress=bar.update,
            )
        except Exception as exc:
            raise CommandError(
                f"Import stopped: {exc}. Completed batches are saved; the failed batch was rolled back. "
                "Re-running the same file is safe."
            )
        finally:
            bar.close()
        self.stdout.write(str(summary))
        if validation.errors:
            raise CommandError(
                f"{len(validation.errors)} row(s) had errors and were not imported (listed above); "
                "the other rows were processed."
            )
