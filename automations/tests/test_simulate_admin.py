"""The "Simulate for a contact" page of the automation editor: organization-scoped, read-only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from automations.models import AutomationRun
from automations.tests.test_admin import login
from automations.tests.test_walker_email import email_step
from delivery.models import TransactionalSend

pytestmark = pytest.mark.usefixtures("local_email")


def test_the_page_walks_the_steps_for_a_contact_of_the_organization(
    client, django_user_model, org, make_automation, make_contact, template
):
    automation = make_automation(
        [("delay", {"duration": 1, "unit": "hours"}), email_step(template)], status="active"
    )
    make_contact("jane@example.com", first_name="Jane")
    login(client, django_user_model, org)
    url = reverse("admin:automations_automation_simulate", args=[automation.pk])
    change = client.get(reverse("admin:automations_automation_change", args=[automation.pk])).content.decode()
    assert url in change

    page = client.get(url, {"email": "Jane@Example.com"}).content.decode()
    assert "Waits 1 hour" in page and "Would send “Hi Jane” to jane@example.com" in page
    assert not AutomationRun.objects.exists() and not TransactionalSend.objects.exists()

    refused = client.get(url, {"email": "nobody@example.com"}).content.decode()
    assert "No contact of this organization has this address" in refused


def test_a_contact_of_another_organization_is_not_found(
    client, django_user_model, org, make_automation, make_contact, template
):
    from owlat.organizations import organization_create

    automation = make_automation([email_step(template)], status="active")
    make_contact("theirs@example.com", organization=organization_create(name="Beta"))
    login(client, django_user_model, org)
    url = reverse("admin:automations_automation_simulate", args=[automation.pk])
    assert (
        "No contact of this organization" in client.get(url, {"email": "theirs@example.com"}).content.decode()
    )
