"""Sign-up forms end to end in a real browser, with real workers and the loopback SMTP sink: build a form in the
admin, sign up on the hosted page and on an embedded copy served from a second loopback origin, confirm through
the confirmation mail, receive the welcome automation's mail; bots (honeypot, too fast, a burst from one address)
get the same answer and leave no trace."""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def site(live_server, settings):
    """Public links point at the live server (also in the workers, which start after this fixture)."""
    settings.SITE_URL = live_server.url
    settings.SIGNUP_MIN_FILL_SECONDS = 2
    settings.SIGNUP_IP_BURST = 4
    settings.SIGNUP_IP_RATE_PER_MINUTE = 0.1
    return live_server.url


@pytest.fixture
def second_origin():
    """A web server on another loopback origin serving whatever page the test sets (the embedding site)."""
    state = {"html": "<p>empty</p>"}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = state["html"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.2:{server.server_port}"
    yield state
    server.shutdown()


def _welcome_automation(org):
    from automations.services import automation_create
    from templates.models import EmailTemplate
    from testsupport.world import activate, email_step

    template = EmailTemplate.objects.create(
        organization=org,
        name="Welcome",
        subject="Welcome, {{firstName|'friend'}}!",
        html_content="<p>Hi {{firstName}}</p>",
    )
    automation = automation_create(
        organization_id=org.pk,
        actor="test",
        name="Welcome",
        trigger_type="contact_created",
        steps=[email_step(template)],
    )
    activate(automation, "test")


def _confirm_link(message) -> str:
    return re.search(r"(http://\S+/forms/confirm/\S+/)", message.text()).group(1)


def _build_form(page, live_server, second_origin) -> str:
    page.goto(f"{live_server.url}/admin/owlat/signupform/add/")
    page.fill("#id_name", "Website footer")
    page.fill("#id_title", "Get the Acme newsletter")
    page.fill("#id_description", "News and tips, twice a month.")
    page.fill("#id_allowed_origins", second_origin["url"])
    page.select_option("select[name='form_topics-0-topic']", label="News")
    page.locator("#fields-group a, #fields-group button").filter(has_text="Add another").first.click()
    page.select_option("select[name='fields-0-kind']", "first_name")
    page.click("[name=_continue]")
    page.wait_for_load_state()
    assert "/change/" in page.url, page.inner_text("body")[:2000]
    snippet = page.input_value("#signup-embed")
    assert "<form" in snippet and second_origin["url"] not in snippet
    page.click("button.signup-copy")
    page.locator("button.signup-copy", has_text="Copied").wait_for()
    screenshot(page, "signup-01-admin-form-builder")
    return snippet


def test_sign_up_confirm_and_welcome_and_bots_refused(  # noqa: PLR0915 - one story
    site, operator, page, live_server, smtp_sink, second_origin, workers
):
    from owlat.conditions import filters_queryset
    from owlat.models import (
        Contact,
        ContactTopic,
        Segment,
        SignupForm,
        SignupFormDay,
        SignupSubmission,
        Topic,
    )

    org = operator["org"]
    news = Topic.objects.create(organization=org, name="News", require_double_opt_in=True)
    _welcome_automation(org)
    login(page, live_server)
    snippet = _build_form(page, live_server, second_origin)
    form = SignupForm.objects.get(organization=org)
    hosted = f"{live_server.url}/forms/{form.pk}/"

    # the hosted page: a visitor signs up
    page.goto(hosted)
    screenshot(page, "signup-02-hosted-page")
    page.fill("input[name=email]", "hana@example.com")
    page.fill("input[name=first_name]", "Hana")
    time.sleep(2.2)
    page.click("button[type=submit]")
    page.locator(".message").wait_for()
    answer = page.inner_text(".message")
    assert answer == form.pending_message
    screenshot(page, "signup-03-hosted-check-your-inbox")

    # the embedded copy on another origin: the script fetched a timestamp (CORS), the post lands on our page
    second_origin["html"] = f"<!doctype html><html><body><h1>Acme blog</h1>{snippet}</body></html>"
    page.goto(second_origin["url"] + "/")
    page.wait_for_function("document.querySelector('[name=_ts]').value !== ''")
    page.fill("input[name=email]", "emil@example.com")
    page.fill("input[name=first_name]", "Emil")
    screenshot(page, "signup-04-embedded-form")
    time.sleep(2.2)
    page.click("button[type=submit]")
    page.locator(".message").wait_for()
    assert page.inner_text(".message") == answer

    # nobody is a contact before confirming; both got a confirmation mail
    assert not Contact.objects.filter(email__in=["hana@example.com", "emil@example.com"]).exists()
    mails = smtp_sink.wait_for(2, timeout=30)
    assert sorted(m.rcpt_tos[0] for m in mails) == ["emil@example.com", "hana@example.com"]

    # bots: the honeypot, a post sooner than the minimum fill time — the same answer, no trace
    page.goto(hosted)
    page.fill("input[name=email]", "honeypot-bot@example.com")
    page.evaluate("document.querySelector('[name=website]').value = 'http://spam.example'")
    time.sleep(2.2)
    page.click("button[type=submit]")
    assert page.inner_text(".message") == answer
    page.goto(hosted)
    fresh = page.input_value("[name=_ts]")
    r = page.request.post(
        hosted, form={"email": "fast-bot@example.com", "_ts": fresh, "topics": str(news.pk)}
    )
    assert r.status == 200 and answer in r.text()
    # a burst from one address: the bucket (4, minus the two sign-ups above) runs dry
    page.goto(hosted)
    ts = page.input_value("[name=_ts]")
    time.sleep(2.2)
    for i in range(5):
        r = page.request.post(
            hosted, form={"email": f"burst{i}@example.com", "_ts": ts, "topics": str(news.pk)}
        )
        assert r.status == 200 and answer in r.text()
    bots = ["honeypot-bot@example.com", "fast-bot@example.com"]
    assert not SignupSubmission.objects.filter(email__in=bots).exists()
    assert SignupSubmission.objects.filter(email__startswith="burst").count() == 2
    counts = SignupFormDay.objects.get(form=form)
    assert (counts.refused_honeypot, counts.refused_too_fast, counts.refused_rate_limit) == (1, 1, 3)

    # Hana confirms through her mail: a button first (scanners prefetch), then she is in
    [hana_mail] = smtp_sink.messages_for("hana@example.com")
    page.goto(_confirm_link(hana_mail))
    assert not Contact.objects.filter(email="hana@example.com").exists()
    page.click("button[type=submit]")
    page.get_by_text(form.confirmed_message).wait_for()
    screenshot(page, "signup-05-confirmed")
    hana = Contact.objects.get(email="hana@example.com")
    assert (hana.source, hana.first_name, hana.doi_status) == ("form", "Hana", "confirmed")
    assert ContactTopic.objects.filter(contact=hana, topic=news, pending_doi_confirmation=False).exists()

    # the welcome automation started for her contact_created, after the confirmation
    def welcome():
        return [m for m in smtp_sink.messages_for("hana@example.com") if m["Subject"] == "Welcome, Hana!"]

    from automations.models import AutomationRun

    # her contact_created started the welcome run (our side of the story, on every database)
    assert AutomationRun.objects.filter(contact=hana).exists()
    deadline = time.monotonic() + 60
    while not welcome() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert welcome(), ([m["Subject"] for m in smtp_sink.messages], workers.logs_tail())
    assert not Contact.objects.filter(email="emil@example.com").exists()  # Emil did not confirm yet

    page.goto(f"{live_server.url}/admin/owlat/signupform/{form.pk}/change/")
    page.locator(".signup-chart").scroll_into_view_if_needed()
    screenshot(page, "signup-06-admin-numbers")

    # the form's contacts as a segment condition, picked from a list (no JSON)
    page.goto(f"{live_server.url}/admin/owlat/segment/add/")
    page.fill("input[name=name]", "Joined through the footer form")
    page.select_option("select[name=filters-conditions-0-kind]", "signup_form")
    page.select_option("select[name=filters-conditions-0-signup_form]", str(form.pk))
    page.locator(".owlat-live-count").filter(has_text="1 contact").wait_for(timeout=10_000)
    screenshot(page, "signup-07-segment-joined-through-form")
    page.locator("[name=_save]").click()
    page.wait_for_url(re.compile(r"/admin/owlat/segment/$"))
    segment = Segment.objects.get(name="Joined through the footer form")
    assert segment.filters["conditions"] == [
        {"kind": "signup_form", "formId": str(form.pk), "operator": "equals"}
    ]
    assert list(filters_queryset(org.pk, segment.filters).values_list("email", flat=True)) == [
        "hana@example.com"
    ]
