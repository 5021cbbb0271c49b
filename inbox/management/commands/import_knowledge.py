"""`manage.py import_knowledge <organization id> <folder>`: import Markdown/text files as knowledge entries
(re-running updates entries by file path); shows a progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inbox.knowledge import knowledge_import
from owlat.models import Organization


class Command(BaseCommand):
    help = "Import a folder of .md/.markdown/.txt files as knowledge entries of an organization."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("organization_id")
        parser.add_argument("folder")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        folder = Path(options["folder"])
        if not folder.is_dir():
            raise CommandError(f"Not a folder: {folder}")
        try:
            org = Organization.objects.filter(pk=options["organization_id"]).first()
        except (ValueError, TypeError):
            org = None
        if org is None:
            raise CommandError(f"Organization not found: {options['organization_id']}")
        progress = None
        if not options["no_progress"]:
            from tqdm import tqdm

            def progress(files):
                return tqdm(files, desc="knowledge", unit="file", file=self.stderr._out)

        counts = knowledge_import(organization_id=org.pk, folder=folder, progress=progress)
        self.stdout.write(
            f"created {counts['created']}, updated {counts['updated']}, skipped {counts['skipped']} file(s)"
        )
