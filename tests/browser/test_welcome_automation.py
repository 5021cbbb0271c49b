"""The welcome automation, built in a real browser with the editor's forms (no JSON), run by real workers:
trigger, an email step chosen with the template picker, a condition, a delay; activate; create a contact in the
admin; the mail is in the local outbox and in the contact's email history."""

from __future__ import annotations

import time

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_env():
    return {"EMAIL_PROVIDER": "local"}


def add_step(page, index: int, step_type: str):
    page.locator("#steps-group a, #steps-group button").filter(has_text="Add another").first.click()
    select = page.locator(f"select[name='steps-{index}-step_type']")
    select.wait_for()
    select.select_option(step_type)
    return page.locator(f"select[name='steps-{index}-step_type']").locator("xpath=ancestor::tr[1]")


def pick_template(row, page, search: str, label: str) -> None:
    row.locator(".owlat-subform[data-key='email'] .select2-selection").click()
    page.locator(".select2-container--open .select2-search__field").fill(search)
    page.locator(".select2-results__option", has_text=label).click()


def test_build_activate_and_receive_a_welcome_automation(page, live_server, operator, workers):
    from automations.models import Automation
    from delivery.models import LocalMessage
    from templates.models import EmailTemplate

    org = operator["org"]
    template = EmailTemplate.objects.create(
        organization=org,
        name="Welcome",
        subject="Welcome, {{firstName|'friend'}}!",
        html_content="<p>Hi {{firstName}}, welcome to Acme.</p>",
        status="published",
    )
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/automations/automation/add/")
    page.fill("#id_name", "Welcome series")
    page.select_option("#id_trigger_type", "contact_created")

    email = add_step(page, 0, "email")
    pick_template(email, page, "Wel", "Welcome")
    assert email.locator("a.owlat-preview").is_visible()

    condition = add_step(page, 1, "condition")
    condition.locator("select[name='steps-1-condition-kind']").select_option("contact_property")
    condition.locator("select[name='steps-1-condition-field']").select_option("firstName")
    condition.locator("select[name='steps-1-condition-operator']").select_option("not_empty")
    assert not condition.locator("input[name='steps-1-condition-value']").is_visible()  # no value to type

    delay = add_step(page, 2, "delay")
    delay.locator("input[name='steps-2-delay-duration']").fill("1")
    delay.locator("select[name='steps-2-delay-unit']").select_option("days")
    screenshot(page, "05-automation-editor-forms")

    page.click("[name=_continue]")
    page.wait_for_load_state()
    automation = Automation.objects.get(name="Welcome series")
    steps = [(s.step_type, s.config) for s in automation.steps.order_by("step_index")]
    assert steps == [
        ("email", {"emailTemplateId": str(template.pk)}),
        (
            "condition",
            {
                "condition": {"kind": "contact_property", "field": "firstName", "operator": "not_empty"},
                "yesBranchStepIndex": None,
                "noBranchStepIndex": None,
            },
        ),
        ("delay", {"duration": 1, "unit": "days"}),
    ]
    assert automation.trigger_type == "contact_created" and automation.trigger_config is None
    screenshot(page, "06-automation-saved")

    page.locator("a[href*='/transition/activate/']").click()
    page.wait_for_load_state()
    assert "Activate this automation?" in page.inner_text("body")
    automation.refresh_from_db()
    assert automation.status == "draft"
    screenshot(page, "06b-automation-activate-confirm")
    page.click("#confirm-action button[name=confirm]")
    page.wait_for_load_state()
    automation.refresh_from_db()
    assert automation.status == "active"
    screenshot(page, "07-automation-active")

    page.goto(f"{live_server.url}/admin/owlat/contact/add/")
    page.fill("#id_email", "ada@example.com")
    page.fill("#id_first_name", "Ada")
    page.click("[name=_continue]")
    page.wait_for_load_state()

    deadline = time.monotonic() + 30  # on SQLite as on PostgreSQL
    while not LocalMessage.objects.filter(to__icontains="ada@example.com").exists():
        assert time.monotonic() < deadline, (
            "the welcome mail did not reach the local outbox within 30 s\n" + workers.logs_tail()
        )
        time.sleep(0.25)

    page.goto(f"{live_server.url}/admin/delivery/localmessage/")
    page.get_by_text("Welcome, Ada!").first.wait_for()
    screenshot(page, "08-local-outbox")

    from owlat.models import Contact

    contact = Contact.objects.get(organization=org, email="ada@example.com")
    page.goto(f"{live_server.url}/admin/owlat/contact/{contact.pk}/change/")
    history = page.get_by_text("Welcome, Ada!")
    history.first.wait_for(timeout=30_000)
    screenshot(page, "09-contact-email-history")

    from django_q.models import Failure

    failed = [(f.func, f.result) for f in Failure.objects.all()]
    assert failed == [], f"background tasks failed during the walk-through: {failed}"
