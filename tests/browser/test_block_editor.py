"""The block editor in a real browser: an operator builds a newsletter from a starter layout with an uploaded
image, two columns and a button, previews it at both widths, sends a test and finds it in the local outbox —
all under the site's enforced Content-Security-Policy (django-csp; tenant HTML in owlat.sandbox's frames), with
no CSP violation or script error reported by any page or frame. The editor is checked as an operator sees it at
1440 and 1024 px: block list and live preview side by side, nothing overflowing, pickers beside their fields.
Screenshots under var/screenshots/ (the 1440 px one is also docs/screenshots/editor.png)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image

from tests.browser.conftest import SCREENSHOTS, login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def _watch(page) -> list[str]:
    """Every CSP violation and script error the page or any of its frames reports (console, pageerror)."""
    problems: list[str] = []

    def console(message) -> None:
        text = message.text
        if "Content Security Policy" in text or "Content-Security-Policy" in text or "Refused to" in text:
            problems.append(f"{message.type}: {text}")
        elif message.type == "error" and "Failed to load resource" not in text:
            problems.append(f"console error: {text}")

    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))
    return problems


def _loaded(page, selector: str) -> None:
    """Wait until the image `selector` has loaded (it fails to when the policy or the server refuses it)."""
    page.wait_for_function(
        "s => { const i = document.querySelector(s); return i && i.complete && i.naturalWidth > 0; }",
        arg=selector,
        timeout=10_000,
    )


def _no_overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or (a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])
    )


def _check_layout(page, width: int) -> Path:
    """The editor at `width` px as an operator sees it: blocks and preview side by side, inside the form, the
    variable pickers beside (not over) their fields, the padding on one row. A screenshot of what is seen."""
    page.set_viewport_size({"width": width, "height": 1100})
    page.wait_for_timeout(300)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the page overflows"
    blocks = page.locator(".obe-blocks").bounding_box()
    preview = page.locator(".obe-preview").bounding_box()
    fieldset = page.locator("fieldset.owlat-editor-fieldset").bounding_box()
    assert preview["x"] >= blocks["x"] + blocks["width"], (width, blocks, preview)  # side by side
    assert preview["x"] + preview["width"] <= fieldset["x"] + fieldset["width"] + 1, (
        width,
        preview,
        fieldset,
    )
    assert blocks["width"] >= 360, blocks
    for row in page.locator(".obe-block .obe-nowrap:has(.obe-vars)").all():
        field, picker = row.locator(".obe-input").bounding_box(), row.locator(".obe-vars").bounding_box()
        assert _no_overlap(field, picker) and picker["x"] + picker["width"] <= blocks["x"] + blocks["width"]
    pads = page.locator(".obe-block[data-id=cta] .obe-pad-input").evaluate_all(
        "els => els.map(e => Math.round(e.getBoundingClientRect().top))"
    )
    assert len(pads) == 4 and len(set(pads)) == 1, pads  # one row
    scale = page.locator(".obe-scale-note").inner_text()
    assert (scale == "") if width >= 1440 else scale.startswith("shown at "), (width, scale)
    page.locator("fieldset.owlat-editor-fieldset").scroll_into_view_if_needed()
    page.evaluate(
        "window.scrollBy(0, document.querySelector('.owlat-editor-fieldset').getBoundingClientRect().top - 70)"
    )
    page.wait_for_timeout(200)
    path = SCREENSHOTS / f"block-editor-{width}.png"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    return path


def _png(tmp_path) -> Path:
    path = tmp_path / "hero.png"
    image = Image.new("RGB", (1200, 500), (37, 99, 235))
    for x in range(0, 1200, 100):
        image.paste((250, 204, 21), (x, 200, x + 50, 300))
    image.save(path, "PNG")
    return path


def test_build_a_newsletter_preview_it_and_send_a_test(
    page, live_server, operator, media, settings, tmp_path
):
    from delivery.models import LocalMessage
    from owlat.models import Contact
    from templates.models import EmailTemplate, TemplateImage
    from testsupport.queue import drain_queue

    settings.SITE_URL = live_server.url
    org = operator["org"]
    org.postal_address = "Acme Inc.\n1 Main Street, Springfield"
    org.save(update_fields=["postal_address"])
    Contact.objects.create(organization=org, email="reader@example.com", first_name="Robin")
    problems = _watch(page)
    login(page, live_server)
    response = page.goto(f"{live_server.url}/admin/templates/emailtemplate/add/")
    policy = response.headers.get("content-security-policy", "")  # enforced, not report-only
    assert "script-src 'self' 'nonce-" in policy and "object-src 'none'" in policy, policy
    page.fill("#id_name", "May newsletter")
    page.fill("#id_subject", "May news for {{firstName|'you'}}")
    page.fill("#id_preview_text", "Stories, an event and a new guide")
    page.click("[data-layout=newsletter]")
    blocks = page.locator(".obe-list").first
    assert blocks.locator(":scope > .obe-block").count() == 7

    # the hero image: upload it from the picker
    hero = page.locator(".obe-block[data-id=hero]")
    hero.locator(".obe-toggle").click()
    hero = page.locator(".obe-block[data-id=hero]")
    hero.get_by_role("button", name="Choose from the library…").click()
    page.set_input_files(".obe-dialog input[type=file]", str(_png(tmp_path)))
    page.wait_for_selector(".obe-block[data-id=hero] img.obe-thumb")
    assert TemplateImage.objects.filter(organization=org).count() == 1
    _loaded(page, "img.obe-thumb")  # under img-src
    # the picker again: the library lists the upload (fetched under connect-src), then cancel
    page.locator(".obe-block[data-id=hero]").get_by_role("button", name="Change image…").click()
    _loaded(page, ".obe-dialog .obe-pick img")
    page.locator(".obe-dialog").get_by_role("button", name="Cancel").click()
    page.locator(".obe-block[data-id=hero] [data-key=alt]").fill("Our spring event")

    # the button: its label gets a variable with a fallback from the picker
    cta = page.locator(".obe-block[data-id=cta]")
    cta.locator(".obe-toggle").click()
    label = page.locator(".obe-block[data-id=cta] [data-key=label]")
    label.fill("Read all stories, ")
    page.once("dialog", lambda dialog: dialog.accept("friend"))
    page.locator(".obe-block[data-id=cta] .obe-vars").first.select_option("firstName")
    assert label.input_value() == "Read all stories, {{firstName|'friend'}}"
    page.locator(".obe-block[data-id=cta] [data-key=href]").fill("https://acme.test/news")

    # duplicate the divider, then drag the copy above the button, then delete it
    divider = page.locator(".obe-block[data-id=rule]")
    divider.get_by_role("button", name="Duplicate").click()
    assert blocks.locator(":scope > .obe-block[data-type=divider]").count() == 2
    copy = blocks.locator(":scope > .obe-block[data-type=divider]").nth(1)
    source = copy.locator(".obe-handle").bounding_box()
    target = page.locator(".obe-block[data-id=cta] .obe-handle").bounding_box()
    page.mouse.move(source["x"] + 5, source["y"] + 5)
    page.mouse.down()
    for step in range(1, 11):  # SortableJS follows the pointer
        page.mouse.move(source["x"] + 5, source["y"] + 5 + (target["y"] - source["y"] - 4) * step / 10)
        page.wait_for_timeout(30)
    page.mouse.up()
    order = blocks.locator(":scope > .obe-block").evaluate_all("els => els.map(e => e.dataset.type)")
    assert order[3:7] == ["columns", "divider", "button", "divider"], order
    page.once("dialog", lambda dialog: dialog.accept())
    blocks.locator(":scope > .obe-block[data-type=divider]").first.get_by_role(
        "button", name="Delete"
    ).click()
    assert blocks.locator(":scope > .obe-block[data-type=divider]").count() == 1
    page.wait_for_timeout(900)  # the live preview follows
    frame = page.frame_locator(".obe-frame")
    frame.locator('text="Second story"').wait_for()
    frame.locator("img[alt='Our spring event']").wait_for()
    assert frame.locator("img[alt='Our spring event']").evaluate(
        "i => i.complete ? i.naturalWidth > 0 : new Promise(r => { i.onload = () => r(true); i.onerror = () => r(false); })"
    )
    # the live preview at phone width, then back
    page.get_by_role("button", name="Mobile 375 px").click()
    assert page.locator(".obe-frame").evaluate("f => f.style.width") == "375px"
    page.frame_locator(".obe-frame").locator('text="Second story"').wait_for()
    page.get_by_role("button", name="Desktop 600 px").click()
    page.frame_locator(".obe-frame").locator('text="Second story"').wait_for()
    screenshot(page, "block-editor")
    docs = _check_layout(page, 1440)
    DOCS.mkdir(parents=True, exist_ok=True)
    shutil.copy(docs, DOCS / "editor.png")
    _check_layout(page, 1024)
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.click("[name=_continue]")
    page.wait_for_load_state()
    template = EmailTemplate.objects.get(name="May newsletter")
    types = [b["type"] for b in template.content["blocks"]]
    assert types == ["heading", "text", "image", "columns", "button", "divider", "footer"], types
    assert len(template.content["blocks"][3]["columns"]) == 2
    image = template.content["blocks"][2]
    assert image["src"].startswith(f"{live_server.url}/img/") and image["alt"] == "Our spring event"
    assert image["width"] == 600 and image["height"] == 250
    assert "mj-column-per-50" in template.html_content

    # the preview: the real message at both widths
    page.goto(f"{live_server.url}/admin/templates/emailtemplate/{template.pk}/preview/")
    assert page.inner_text("#preview-subject") == "May news for Robin"
    assert "hello@acme.test" in page.inner_text("#preview-from")
    assert page.inner_text("#preview-preheader") == "Stories, an event and a new guide"
    desktop = page.frame_locator("#preview-desktop iframe")
    mobile = page.frame_locator("#preview-mobile iframe")
    desktop.locator("text=Read all stories, Robin").wait_for()
    unsubscribe = desktop.locator("a:has-text('Unsubscribe')").get_attribute("href")
    assert unsubscribe.startswith(f"{live_server.url}/unsub/")
    assert "Springfield" in desktop.locator("body").inner_text()
    # side by side at desktop width the columns sit next to each other; at 375 px they stack
    d1 = desktop.locator('text="First story"').bounding_box()
    d2 = desktop.locator('text="Second story"').bounding_box()
    m1 = mobile.locator('text="First story"').bounding_box()
    m2 = mobile.locator('text="Second story"').bounding_box()
    assert abs(d1["y"] - d2["y"]) < 5 and d2["x"] > d1["x"] + 200
    assert m2["y"] > m1["y"] + 20 and abs(m1["x"] - m2["x"]) < 5
    assert "Read all stories, Robin: https://acme.test/news" in page.inner_text("#preview-text")
    screenshot(page, "block-preview")
    assert page.request.get(unsubscribe).status == 200  # the link works
    page.goto(page.url + "?dark=1")
    screenshot(page, "block-preview-dark")

    # send a test and find it in the local outbox
    page.goto(f"{live_server.url}/admin/templates/emailtemplate/{template.pk}/send-test/")
    page.fill("#id_to", "olivia@acme.test")
    page.select_option("#id_contact", label="reader@example.com")
    page.click("input[value='Send test email']")
    page.wait_for_load_state()
    drain_queue(max_tasks=50)
    message = LocalMessage.objects.get()
    assert message.subject == "[Test] May news for Robin"
    assert "Read all stories, Robin" in message.html and "/unsub/" in message.html
    assert "Springfield" in message.html and "Unsubscribe: http" in message.text
    page.goto(f"{live_server.url}/admin/delivery/localmessage/{message.pk}/change/")
    page.wait_for_load_state()
    assert "May news for" in page.inner_text("body")
    screenshot(page, "block-test-in-outbox")
    assert (SCREENSHOTS / "block-editor.png").exists()
    assert problems == [], problems  # no CSP violation, no script error, on any page or frame
