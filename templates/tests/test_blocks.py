"""The block document (templates.blocks): validation that names the block and field, sanitized rich text,
language texts; and its rendering to responsive email HTML and plain text (templates.block_render)."""

from __future__ import annotations

import re

import pytest

from templates.block_render import render_document
from templates.block_translations import overrides_clean
from templates.blocks import BlockError, document_clean, html_document


def doc(*blocks, **settings):
    return {"version": 1, "settings": settings, "blocks": list(blocks)}


def every_block():
    return doc(
        {"id": "h", "type": "heading", "text": "Hello {{firstName|'there'}} & co"},
        {
            "id": "t",
            "type": "text",
            "html": "<p><b>Bold</b> <i>it</i> <a href='https://e.org/a?x=1&y=2'>link</a></p>",
        },
        {
            "id": "i",
            "type": "image",
            "src": "https://cdn.e.org/a.png",
            "alt": "A cat",
            "width": 300,
            "height": 200,
        },
        {"id": "b", "type": "button", "label": "Read more", "href": "https://e.org/more"},
        {"id": "d", "type": "divider"},
        {"id": "s", "type": "spacer", "height": 30},
        {
            "id": "c",
            "type": "columns",
            "columns": [
                {"blocks": [{"id": "c1", "type": "text", "html": "Left column"}]},
                {"blocks": [{"id": "c2", "type": "button", "label": "Right", "href": "https://e.org/r"}]},
            ],
        },
        {"id": "so", "type": "social", "links": [{"network": "github", "url": "https://github.com/owlat"}]},
        {"id": "f", "type": "footer", "text": "You subscribed on our site."},
        {"id": "r", "type": "raw", "html": "<table><tr><td>Raw cell</td></tr></table>"},
    )


@pytest.mark.parametrize(
    ("block", "field", "message"),
    [
        (
            {"id": "b1", "type": "button", "label": "Go", "href": "javascript:alert(1)"},
            "content.blocks[0].href",
            "content.blocks[0] (button block “b1”): href must be an https:// address",
        ),
        ({"id": "h1", "type": "heading"}, "content.blocks[0].text", "(heading block “h1”): text is required"),
        (
            {"id": "h1", "type": "heading", "text": "x", "color": "red"},
            "content.blocks[0].color",
            "color must be a colour like #1f2937",
        ),
        ({"id": "x", "type": "video"}, "content.blocks[0].type", "type must be one of heading, text"),
        (
            {"id": "s1", "type": "spacer", "height": 5000},
            "content.blocks[0].height",
            "height must be less than or equal to 200",
        ),
        ({"id": "s1", "type": "spacer", "colour": "#000000"}, "content.blocks[0].colour", "not a setting"),
    ],
)
def test_an_invalid_block_is_refused_naming_the_block_and_field(block, field, message):
    with pytest.raises(BlockError) as err:
        document_clean(doc(block))
    assert err.value.field == field
    assert message in err.value.message


def test_a_block_inside_columns_is_named_by_its_full_path():
    bad = doc(
        {
            "id": "c",
            "type": "columns",
            "columns": [{"blocks": []}, {"blocks": [{"id": "img", "type": "image", "src": "ftp://x/a.png"}]}],
        }
    )
    with pytest.raises(BlockError) as err:
        document_clean(bad)
    assert err.value.field == "content.blocks[0].columns[1].blocks[0].src"
    assert err.value.message.startswith(
        "content.blocks[0].columns[1].blocks[0] (image block “img”): src must be"
    )


def test_block_ids_are_unique_and_the_version_is_required():
    with pytest.raises(BlockError, match="two blocks have the id “a”"):
        document_clean(doc({"id": "a", "type": "divider"}, {"id": "a", "type": "spacer"}))
    with pytest.raises(BlockError) as err:
        document_clean({"blocks": []})
    assert err.value.field == "content.version"


def test_rich_text_keeps_formatting_links_and_lists_and_drops_scripts():
    cleaned = document_clean(
        doc(
            {
                "id": "t",
                "type": "text",
                "html": '<p onclick="x()">Hi <strong>you</strong> <em>there</em><script>alert(1)</script>'
                '<a href="javascript:alert(1)">bad</a> <a href="{{preferencesUrl}}">prefs</a></p>'
                "<ul><li>one</li></ul><ol><li>two</li></ol><img src=x onerror=alert(1)>",
            }
        )
    )
    html = cleaned["blocks"][0]["html"]
    assert html == (
        '<p>Hi <strong>you</strong> <em>there</em><a>bad</a> <a href="{{preferencesUrl}}">prefs</a></p>'
        "<ul><li>one</li></ul><ol><li>two</li></ol>"
    )


def test_every_block_type_renders_to_responsive_email_html_and_text():
    rendered = render_document(document_clean(every_block()), preview_text="This month")
    html = rendered.html
    assert html.lower().startswith("<!doctype html>") and 'lang="en"' in html
    assert "Hello {{firstName|'there'}} &amp; co" in html  # the variable survives for personalization
    assert "<b>Bold</b>" in html and 'href="https://e.org/a?x=1&amp;y=2"' in html
    assert 'src="https://cdn.e.org/a.png"' in html and 'alt="A cat"' in html and 'width="300"' in html
    assert 'href="https://e.org/more"' in html and "Read more" in html
    assert "mj-column-per-50" in html and "@media only screen and (min-width:480px)" in html  # columns stack
    assert 'href="https://github.com/owlat"' in html
    assert 'href="{{unsubscribeUrl}}"' in html and 'href="{{preferencesUrl}}"' in html
    assert "{{postalAddress}}" in html and "Raw cell" in html and "This month" in html
    assert 'style="' in html  # styles inline
    assert rendered.text.split("\n\n")[:4] == [
        "Hello {{firstName|'there'}} & co",
        "Bold it link (https://e.org/a?x=1&y=2)",
        "[A cat]",
        "Read more: https://e.org/more",
    ]
    assert (
        "Unsubscribe: {{unsubscribeUrl}}" in rendered.text
        and "GitHub: https://github.com/owlat" in rendered.text
    )


def test_social_icons_are_our_own_static_files_on_site_url_with_their_size(settings):
    from django.contrib.staticfiles import finders
    from PIL import Image

    from templates.blocks import SOCIAL_NETWORKS

    settings.SITE_URL = "https://mail.acme.test"
    links = [{"network": n, "url": f"https://{n}.example/acme"} for n in SOCIAL_NETWORKS]
    html = render_document(document_clean(doc({"id": "so", "type": "social", "links": links}))).html
    icons = re.findall(r'<img alt="[^"]*" title="[^"]*" src="([^"]+)" width="28" height="28"', html)
    assert icons == [f"https://mail.acme.test/static/editor/social/{n}.png" for n in SOCIAL_NETWORKS]
    assert "mailjet" not in html and html.count("<img") == len(SOCIAL_NETWORKS)
    for network in SOCIAL_NETWORKS:  # built at setup (scripts/editor_assets.sh), served as static files
        path = finders.find(f"editor/social/{network}.png")
        assert path, f"the {network} icon is missing: run scripts/editor_assets.sh"
        with Image.open(path) as image:
            assert image.size == (56, 56) and image.mode == "RGBA"  # twice the shown size


def test_an_html_template_converts_to_one_raw_block_sent_as_written():
    markup = "<html><body><p>Mine {{firstName}}</p></body></html>"
    document = document_clean(html_document(markup))
    assert [b["type"] for b in document["blocks"]] == ["raw"]
    assert render_document(document).html == markup


def test_language_texts_override_the_translatable_fields_only():
    document = document_clean(every_block())
    texts = overrides_clean(
        {
            "de": {
                "h": {"text": "Hallo"},
                "b": {"label": "Weiter", "href": "https://e.org/de"},
                "gone": {"text": "x"},
            }
        },
        document,
    )
    assert texts == {"de": {"h": {"text": "Hallo"}, "b": {"label": "Weiter", "href": "https://e.org/de"}}}
    rendered = render_document(document, overrides=texts["de"], language="de")
    assert "Hallo" in rendered.html and "Weiter" in rendered.html and 'lang="de"' in rendered.html
    with pytest.raises(BlockError) as err:
        overrides_clean({"de": {"d": {"color": "#000000"}}}, document)
    assert err.value.field == "translations.de.d.color"


def test_raw_html_mjml_would_refuse_is_sent_as_written_and_control_characters_dropped():
    document = document_clean(
        {
            "version": 1,
            "blocks": [
                {"type": "text", "id": "t", "html": "Hello\x01 wor\bld"},
                {"type": "raw", "id": "r1", "html": "<p>1 < 2</p></div>"},
                {
                    "type": "columns",
                    "id": "c",
                    "columns": [
                        {
                            "blocks": [
                                {"type": "raw", "id": "r-", "html": "<b>left <!--owlat-raw:7231--></b>"}
                            ]
                        },
                        {"blocks": []},
                    ],
                },
            ],
        }
    )
    html = render_document(document).html
    assert "<p>1 < 2</p></div>" in html
    # a raw block's text that looks like a placeholder stays text: raw HTML is put in once, never re-read
    assert "<b>left <!--owlat-raw:7231--></b>" in html
    assert html.count("<p>1 < 2</p></div>") == 1
    assert "Hello world" in html and "\x01" not in html and "\b" not in html


def test_links_the_document_allows_are_accepted():
    for url in ("tel:12 3", "mailto:a", "{{unsubscribeUrl}}", "https://example.com/x"):
        block = {"type": "button", "id": "b", "label": "Go", "href": url}
        cleaned = document_clean({"version": 1, "blocks": [block]})
        assert cleaned["blocks"][0]["href"] == url
    with pytest.raises(BlockError, match="must be an integer"):
        document_clean({"version": 1, "blocks": [{"type": "spacer", "id": "s", "padding": {"left": False}}]})
