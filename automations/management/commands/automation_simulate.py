"""`manage.py automation_simulate <automation id> <contact email or id>`: print the steps a run would take for the
contact now (conditions with the contact's values, branches, waits, the mail), sending and writing nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from automations.models import Automation
from automations.simulate import automation_simulate
from owlat.management.arguments import uuid_arg


class Command(BaseCommand):
    help = "Show what an automation would do for one contact, without sending or writing anything."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("automation_id", type=uuid_arg)
        parser.add_argument(
            "contact", help="The contact's email address or id (of the automation's organization)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        automation = Automation.objects.filter(pk=options["automation_id"]).first()
        if automation is None:
            raise CommandError(f"No automation has the id {options['automation_id']}.")
        contact = _contact(automation.organization_id, options["contact"])
        simulation = automation_simulate(automation=automation, contact=contact)
        if simulation.warning:
            self.stdout.write(f"Note: {simulation.warning}")
        for step in simulation.steps:
            self.stdout.write(
                f"{step.index:>3}  {step.step_type:<9} {step.at:%Y-%m-%d %H:%M %Z}  {step.summary}"
            )
        self.stdout.write(f"End: {simulation.end}")


def _contact(organization_id: Any, value: str) -> Any:
    import uuid

    from owlat.contacts import live_contacts, normalize_email

    value = value.strip()
    if len(value) > 254:
        raise CommandError("contact: give an email address or a contact id (at most 254 characters).")
    contacts = live_contacts(organization_id)
    if "@" in value:
        contact = contacts.filter(email=normalize_email(value)).first()
    else:
        try:
            contact = contacts.filter(pk=uuid.UUID(value)).first()
        except ValueError:
            raise CommandError("contact: give an email address or a contact id.") from None
    if contact is None:
        raise CommandError(f"No live contact {value} in the automation's organization.")
    return contact
