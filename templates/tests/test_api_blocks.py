"""Block content through the templates API (API-26 with blocks): round trip, rendered HTML, language texts and
a 400 naming the block and field for an invalid block."""

from __future__ import annotations

import pytest

from templates.models import EmailTemplate
from templates.rendering import render_template
from testsupport.api import ApiClient, error_of, make_key


@pytest.fixture
def api(org):
    _, raw = make_key(org, ["templates:read", "templates:write"])
    return ApiClient(raw)


CONTENT = {
    "version": 1,
    "settings": {"backgroundColor": "#eeeeee"},
    "blocks": [
        {"id": "title", "type": "heading", "text": "Hello {{firstName|'there'}}", "level": 2},
        {
            "id": "cols",
            "type": "columns",
            "columns": [
                {"blocks": [{"id": "left", "type": "text", "html": "<p>Left <b>side</b></p>"}]},
                {
                    "blocks": [
                        {"id": "go", "type": "button", "label": "Open", "href": "https://example.org/go"}
                    ]
                },
            ],
        },
        {"id": "foot", "type": "footer"},
    ],
}


def test_block_content_round_trips_and_renders_the_html_that_is_sent(api, org):
    r = api.post(
        "/templates", {"name": "News", "subject": "Hi", "content": CONTENT, "htmlContent": "<p>ignored"}
    )
    assert r.status_code == 201, r.content
    data = r.json()["data"]
    content = data["content"]
    assert content["version"] == 1 and content["settings"]["backgroundColor"] == "#eeeeee"
    assert [b["id"] for b in content["blocks"]] == ["title", "cols", "foot"]
    assert content["blocks"][1]["columns"][1]["blocks"][0]["href"] == "https://example.org/go"
    assert "mj-column-per-50" in data["htmlContent"] and "ignored" not in data["htmlContent"]
    # what GET returns can be sent back (its writable keys; the rendered HTML among them is ignored)
    again = api.get(f"/templates/{data['id']}").json()["data"]
    writable = ("name", "subject", "content", "htmlContent", "translations", "htmlTranslations")
    r = api.put(f"/templates/{data['id']}", {key: again[key] for key in writable})
    assert r.status_code == 200, r.content
    assert r.json()["data"]["content"] == content
    template = EmailTemplate.objects.get(pk=data["id"])
    rendered = render_template(template, variables={"firstName": "", "unsubscribeUrl": "https://u.example/x"})
    assert "Hello there" in rendered.html and 'href="https://u.example/x"' in rendered.html
    assert rendered.text.startswith("Hello there\n\nLeft side\n\nOpen: https://example.org/go")


def test_language_texts_render_each_language_version(api, org):
    r = api.post(
        "/templates",
        {
            "name": "News",
            "subject": "Hi",
            "content": CONTENT,
            "supportedLanguages": ["en", "de"],
            "translations": {"de": {"title": {"text": "Hallo {{firstName}}"}, "go": {"label": "Öffnen"}}},
            "htmlTranslations": {"de": {"subject": "Hallo"}},
        },
    )
    assert r.status_code == 201, r.content
    template = EmailTemplate.objects.get(pk=r.json()["data"]["id"])
    german = render_template(template, variables={"firstName": "Eva"}, language="de")
    assert german.subject == "Hallo" and "Hallo Eva" in german.html and "Öffnen" in german.html
    assert 'lang="de"' in german.html and "Öffnen: https://example.org/go" in german.text
    english = render_template(template, variables={"firstName": "Eva"}, language="en")
    assert "Hello Eva" in english.html and "Open" in english.html


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            lambda c: c["blocks"][1]["columns"][1]["blocks"][0].update(href="javascript:alert(1)"),
            "content.blocks[1].columns[1].blocks[0].href",
            "content.blocks[1].columns[1].blocks[0] (button block “go”): href must be an https:// address",
        ),
        (
            lambda c: c["blocks"][0].update(level=7),
            "content.blocks[0].level",
            "content.blocks[0] (heading block “title”): level must be 1, 2 or 3",
        ),
        (
            lambda c: c["blocks"].append({"id": "x", "type": "carousel"}),
            "content.blocks[3].type",
            "content.blocks[3] (block “x”): type must be one of",
        ),
    ],
)
def test_an_invalid_block_gets_a_400_naming_the_block_and_field(api, org, change, field, message):
    import copy

    content = copy.deepcopy(CONTENT)
    change(content)
    r = api.post("/templates", {"name": "News", "subject": "Hi", "content": content})
    assert r.status_code == 400
    error = error_of(r)
    assert error["data"]["field"] == field
    assert error["message"].startswith(message), error["message"]
    assert not EmailTemplate.objects.exists()


def test_html_alone_cannot_overwrite_a_block_template_and_texts_are_checked(api, org):
    tid = api.post("/templates", {"name": "News", "subject": "Hi", "content": CONTENT}).json()["data"]["id"]
    r = api.patch(f"/templates/{tid}", {"htmlContent": "<p>x</p>"})
    assert r.status_code == 400 and error_of(r)["data"]["field"] == "htmlContent"
    assert "change content instead" in error_of(r)["message"]
    r = api.patch(f"/templates/{tid}", {"translations": {"de": {"go": {"buttonColor": "#000000"}}}})
    assert r.status_code == 400 and error_of(r)["data"]["field"] == "translations.de.go.buttonColor"
