"""`manage.py create_api_key --organization <id|name> --name N --scopes a,b`: prints a new key once (DOM-03)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from owlat.models import ApiKey, Organization


def api_key_issue(*, organization: str, name: str, scopes: str) -> tuple[ApiKey, str]:
    """Resolve the organization, check name and scopes, create the key. Raises CommandError on bad input."""
    from owlat.apikeys import SCOPES, InvalidScopes, api_key_create
    from owlat.imports import resolve_organization

    if not (name or "").strip():
        raise CommandError("--name must not be empty.")
    if len(name) > ApiKey._meta.get_field("name").max_length:
        raise CommandError(f"--name must be at most {ApiKey._meta.get_field('name').max_length} characters.")
    scope_list = [s.strip() for s in (scopes or "").split(",") if s.strip()]
    if not scope_list:
        raise CommandError(f"--scopes needs at least one scope. Valid scopes: {', '.join(SCOPES)}")
    try:
        org = resolve_organization(organization)
    except (Organization.DoesNotExist, ValueError) as exc:
        raise CommandError(str(exc))
    try:
        return api_key_create(organization_id=org.pk, name=name.strip(), scopes=scope_list)
    except InvalidScopes as exc:
        raise CommandError(str(exc))


class Command(BaseCommand):
    help = "Create an API key for an organization and print it (it is shown only once)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--organization", required=True, help="Organization id or exact name.")
        parser.add_argument("--name", required=True, help="A name for the key.")
        parser.add_argument(
            "--scopes", required=True, help="Comma-separated scopes, e.g. contacts:read,events:write"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        key, raw = api_key_issue(
            organization=options["organization"], name=options["name"], scopes=options["scopes"]
        )
        self.stderr.write(
            f'Created API key "{key.name}" ({", ".join(key.scopes)}) for {key.organization.name}. '
            "Store it now; it is shown only once:"
        )
        self.stdout.write(raw)
