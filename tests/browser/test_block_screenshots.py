"""Each block type's email HTML, as headless Chromium draws it at 600 px (desktop) and 375 px (phone), compared
with its own committed reference picture (tests/browser/references/blocks/<case>-<width>.png).

The HTML is the real rendering (templates.block_render: MJML, CSS inlined) personalized as a recipient gets it.
Every request the message makes is answered here: the social icons from our static files (as SITE_URL serves
them), the picture of the image block from a generated PNG; any other request fails the test, so the pictures
depend on nothing outside the project.

Comparison: the same size, and at most `MAX_DIFFERENT` of the pixels differing by more than `CHANNEL_TOLERANCE`
in a colour channel (anti-aliasing noise passes, a moved, resized, recoloured or missing element does not). On a
mismatch the actual picture and a difference map are written to var/screenshots/blocks/.

The references were drawn with this machine image's fonts (fontconfig's DejaVu Sans stands in for Arial). After
an intended change of the rendering — or on a machine with other fonts — regenerate them and look at them:

    OWLAT_UPDATE_REFERENCES=1 .venv/bin/python -m pytest tests/browser/test_block_screenshots.py

which writes the references instead of comparing (refused under CI: references are never regenerated there).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from tests.browser.conftest import SCREENSHOTS

REFERENCES = Path(__file__).resolve().parent / "references" / "blocks"
WIDTHS = (600, 375)
CHANNEL_TOLERANCE = 48
MAX_DIFFERENT = 0.002  # of the pixels
SITE = "https://owlat.test"
IMAGES = "https://images.owlat.test"
UPDATE = os.environ.get("OWLAT_UPDATE_REFERENCES") == "1"


def _text(block_id: str, html: str) -> dict:
    return {"id": block_id, "type": "text", "html": html}


CASES: dict[str, list[dict]] = {
    "heading": [{"id": "h", "type": "heading", "text": "Spring news from Acme", "level": 1}],
    "text": [
        _text(
            "t",
            "<p>Hello <strong>Robin</strong>, here is <em>what happened</em> this month. "
            "<a href='https://acme.test/blog'>Read the blog</a>.</p><ul><li>A new guide</li><li>Two events</li></ul>",
        )
    ],
    "image": [
        {
            "id": "i",
            "type": "image",
            "src": f"{IMAGES}/hero.png",
            "alt": "Our spring event",
            "width": 400,
            "height": 160,
        }
    ],
    "button": [{"id": "b", "type": "button", "label": "Read all stories", "href": "https://acme.test/news"}],
    "divider": [{"id": "d", "type": "divider", "thickness": 2, "color": "#9ca3af"}],
    "spacer": [
        _text("above", "<p>Above the spacer</p>"),
        {"id": "s", "type": "spacer", "height": 48},
        _text("below", "<p>Below the spacer</p>"),
    ],
    "columns-2": [
        {
            "id": "c",
            "type": "columns",
            "columns": [
                {
                    "blocks": [
                        {"id": "c1", "type": "heading", "text": "First story", "level": 3},
                        _text("c1t", "A short summary of the first story."),
                    ]
                },
                {
                    "blocks": [
                        {"id": "c2", "type": "heading", "text": "Second story", "level": 3},
                        _text("c2t", "A short summary of the second story."),
                    ]
                },
            ],
        }
    ],
    "columns-3": [
        {
            "id": "c",
            "type": "columns",
            "columns": [
                {
                    "blocks": [
                        _text(f"c{i}t", f"Column {i} text"),
                        {"id": f"c{i}b", "type": "button", "label": f"Go {i}", "href": "https://acme.test"},
                    ]
                }
                for i in (1, 2, 3)
            ],
        }
    ],
    "social": [
        {
            "id": "so",
            "type": "social",
            "links": [
                {"network": n, "url": f"https://{n}.example/acme"}
                for n in ("facebook", "instagram", "linkedin", "x", "youtube", "github", "pinterest", "web")
            ],
        }
    ],
    "footer": [
        {"id": "f", "type": "footer", "text": "You get this email because you signed up on our website."}
    ],
    "raw": [
        {
            "id": "r",
            "type": "raw",
            "html": '<table role="presentation" width="100%"><tr><td style="padding:16px 25px;background:#fef3c7;'
            'font:16px Arial,sans-serif;color:#92400e">A raw HTML cell, sent as written</td></tr></table>',
        }
    ],
}
RECIPIENT = {
    "firstName": "Robin",
    "unsubscribeUrl": f"{SITE}/unsub/token",
    "preferencesUrl": f"{SITE}/preferences/token",
    "postalAddress": "Acme Inc.\n1 Main Street, Springfield",
}


def _hero_png() -> bytes:
    image = Image.new("RGB", (800, 320), (37, 99, 235))
    for x in range(0, 800, 100):
        image.paste((250, 204, 21), (x, 120, x + 50, 200))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _email_html(blocks: list[dict]) -> str:
    from templates.block_render import render_document
    from templates.blocks import document_clean
    from templates.rendering import personalize

    document = document_clean({"version": 1, "blocks": blocks})
    return personalize(render_document(document).html, RECIPIENT, html_mode=True)


def _answer(outside: list[str]):
    from django.contrib.staticfiles import finders

    hero = _hero_png()

    def handle(route) -> None:
        url = route.request.url
        if url.startswith(f"{SITE}/static/"):
            path = finders.find(url.removeprefix(f"{SITE}/static/"))
            if path:
                route.fulfill(status=200, content_type="image/png", body=Path(path).read_bytes())
                return
        elif url == f"{IMAGES}/hero.png":
            route.fulfill(status=200, content_type="image/png", body=hero)
            return
        outside.append(url)
        route.abort()

    return handle


def _difference(actual: Image.Image, reference: Image.Image) -> tuple[float, Image.Image]:
    red, green, blue = ImageChops.difference(actual.convert("RGB"), reference.convert("RGB")).split()
    worst = ImageChops.lighter(
        ImageChops.lighter(red, green), blue
    )  # each pixel's largest channel difference
    mask = worst.point(lambda v: 255 if v > CHANNEL_TOLERANCE else 0)
    different = mask.histogram()[255]
    return different / (actual.width * actual.height), mask


@pytest.fixture(scope="module")
def browser_page():
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 600, "height": 20}, device_scale_factor=1)
        yield context.new_page()
        browser.close()


def test_every_case_has_its_references_and_ci_never_regenerates_them():
    assert not (UPDATE and os.environ.get("CI")), "OWLAT_UPDATE_REFERENCES is refused under CI"
    missing = [
        f"{name}-{w}.png" for name in CASES for w in WIDTHS if not (REFERENCES / f"{name}-{w}.png").exists()
    ]
    assert UPDATE or not missing, f"references missing: {missing}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", list(CASES))
def test_each_block_type_looks_like_its_reference(browser_page, settings, case, width):
    if UPDATE and os.environ.get("CI"):
        pytest.fail("OWLAT_UPDATE_REFERENCES is refused under CI: regenerate the references on a workstation")
    settings.SITE_URL = SITE
    page = browser_page
    outside: list[str] = []
    page.unroute("**/*")
    page.route("**/*", _answer(outside))
    page.set_viewport_size({"width": width, "height": 20})
    page.set_content(_email_html(CASES[case]), wait_until="load")
    page.evaluate("document.fonts.ready")
    assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)"), (
        "an image failed"
    )
    assert outside == [], f"the message loaded something from outside: {outside}"
    actual = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")
    reference_path = REFERENCES / f"{case}-{width}.png"
    if UPDATE:
        REFERENCES.mkdir(parents=True, exist_ok=True)
        actual.save(reference_path, "PNG", optimize=True)
        return
    reference = Image.open(reference_path)
    out = SCREENSHOTS / "blocks"
    if actual.size != reference.size:
        out.mkdir(parents=True, exist_ok=True)
        actual.save(out / f"{case}-{width}.actual.png")
        pytest.fail(f"{case} at {width} px is {actual.size}, its reference {reference.size} (see {out})")
    share, mask = _difference(actual, reference)
    if share > MAX_DIFFERENT:
        out.mkdir(parents=True, exist_ok=True)
        actual.save(out / f"{case}-{width}.actual.png")
        mask.save(out / f"{case}-{width}.diff.png")
        pytest.fail(
            f"{case} at {width} px differs from its reference in {share:.2%} of its pixels (see {out})"
        )
