"""Small factories for the automations tests. History is set up through services and the lifecycle."""

from __future__ import annotations

import itertools

import pytest

from automations.lifecycle import automation_transition
from automations.models import Automation, AutomationStep
from owlat.organizations import organization_create
from templates.models import EmailTemplate

_counter = itertools.count()


@pytest.fixture
def org(db):
    return organization_create(name="Acme", default_from_email="hello@acme.test", default_from_name="Acme")


@pytest.fixture
def local_email(settings):
    """Mail goes through the local provider (no SMTP server): what the walker tests send with."""
    settings.EMAIL_PROVIDER = "local"


@pytest.fixture
def template(org):
    """The walker tests' automation template: greets the contact by first name."""
    return EmailTemplate.objects.create(
        organization=org,
        name="Welcome",
        subject="Hi {{firstName|'there'}}",
        html_content="<p>Hello {{firstName}}</p>",
        type="automation",
    )


@pytest.fixture
def make_contact(org):
    from owlat.contacts import contact_find_or_create

    def make(email: str | None = None, organization=None, **fields):
        organization = organization or org
        email = email or f"person{next(_counter)}@example.com"
        contact, _ = contact_find_or_create(
            organization_id=organization.pk, email=email, source="api", actor="test", fire=False, **fields
        )
        return contact

    return make


@pytest.fixture
def contact(make_contact):
    return make_contact("jane@example.com", first_name="Jane")


@pytest.fixture
def make_automation(org):
    """`steps` is a list of (step_type, config); rows are written as given (the walker must cope with bad
    configs too). `status` is reached through the lifecycle."""

    def make(
        steps=(),
        *,
        trigger_type="contact_created",
        trigger_config=None,
        status="draft",
        organization=None,
        name=None,
    ):
        organization = organization or org
        automation = Automation.objects.create(
            organization=organization,
            name=name or f"Automation {next(_counter)}",
            trigger_type=trigger_type,
            trigger_config=trigger_config,
        )
        for i, (step_type, config) in enumerate(steps):
            AutomationStep.objects.create(
                organization=organization,
                automation=automation,
                step_index=i,
                step_type=step_type,
                config=config,
            )
        path = {"draft": [], "active": ["active"], "paused": ["active", "paused"]}[status]
        for to in path:
            outcome = automation_transition(automation_id=automation.pk, to=to, actor="test")
            assert outcome.ok, outcome
        automation.refresh_from_db()
        return automation

    return make


DELAY_1H = ("delay", {"duration": 1, "unit": "hours"})
