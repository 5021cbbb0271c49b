"""Simulating an automation in the editor, in a real browser: two contacts take different branches of a
condition; the page shows each one's walk and nothing is sent."""

from __future__ import annotations

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

IS_PRO = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}


def _branching(org):
    from automations.lifecycle import automation_transition
    from automations.models import Automation, AutomationStep
    from templates.models import EmailTemplate

    welcome = EmailTemplate.objects.create(
        organization=org, name="Pro tips", subject="Pro tips for {{firstName}}", html_content="<p>Hi</p>",
        type="automation",
    )  # fmt: skip
    upgrade = EmailTemplate.objects.create(
        organization=org, name="Upgrade", subject="Upgrade, {{firstName}}?", html_content="<p>Hi</p>",
        type="automation",
    )  # fmt: skip
    automation = Automation.objects.create(
        organization=org, name="Onboarding", trigger_type="contact_created"
    )
    steps = [
        ("delay", {"duration": 1, "unit": "days"}),
        ("condition", {"condition": IS_PRO, "yesBranchStepIndex": 2, "noBranchStepIndex": 4}),
        ("email", {"emailTemplateId": str(welcome.pk)}),
        ("end", {}),
        ("email", {"emailTemplateId": str(upgrade.pk)}),
    ]
    for i, (kind, config) in enumerate(steps):
        AutomationStep.objects.create(
            organization=org, automation=automation, step_index=i, step_type=kind, config=config
        )
    assert automation_transition(automation_id=automation.pk, to="active", actor="test").ok
    return automation


def _contact(org, email, first_name, plan):
    from owlat.contacts import contact_find_or_create

    contact, _ = contact_find_or_create(
        organization_id=org.pk, email=email, first_name=first_name, source="api", actor="t", fire=False,
        properties={"plan": plan},
    )  # fmt: skip
    return contact


def test_simulate_two_contacts_through_different_branches(operator, page, live_server):
    from automations.models import AutomationRun
    from delivery.models import TransactionalSend

    org = operator["org"]
    automation = _branching(org)
    _contact(org, "pia@example.com", "Pia", "pro")
    _contact(org, "fred@example.com", "Fred", "free")
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/automations/automation/{automation.pk}/change/")
    page.get_by_test_id("simulate-link").click()

    page.fill("input[name=email]", "pia@example.com")
    page.get_by_role("button", name="Simulate").click()
    steps = page.get_by_test_id("simulate-steps")
    steps.wait_for()
    assert [r.get_attribute("data-outcome") for r in steps.locator("tbody tr").all()] == [
        "waits", "yes", "would_send", "ends"
    ]  # fmt: skip
    assert "Would send “Pro tips for Pia” to pia@example.com" in steps.inner_text()
    assert "the contact's plan is 'pro'" in steps.inner_text()
    screenshot(page, "automation-simulate-01-pro-branch")

    page.fill("input[name=email]", "fred@example.com")
    page.get_by_role("button", name="Simulate").click()
    page.get_by_test_id("simulate-steps").wait_for()
    text = page.get_by_test_id("simulate-steps").inner_text()
    assert "Would send “Upgrade, Fred?” to fred@example.com" in text and "Pro tips" not in text
    assert "The run completes" in page.get_by_test_id("simulate-end").inner_text()
    screenshot(page, "automation-simulate-02-other-branch")

    assert not AutomationRun.objects.exists() and not TransactionalSend.objects.exists()
