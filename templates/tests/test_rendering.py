"""DOM-13 rendering: personalization (escaped in HTML, CR/LF-free subjects), fallbacks, language resolution,
CSS inlining and the plain-text alternative."""

from __future__ import annotations

import datetime as dt
import uuid

from templates.models import EmailTemplate
from templates.rendering import (
    html_to_text,
    personalize,
    personalize_subject,
    render_template,
    resolve_language,
)


def make(**kw):
    defaults = {
        "id": uuid.uuid4(),
        "name": "t",
        "subject": "Hi {{firstName}}",
        "html_content": "<p>Hi {{firstName}}</p>",
        "default_language": "en",
        "html_translations": {},
        "updated_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    }
    defaults.update(kw)
    return EmailTemplate(**defaults)


def test_variables_and_fallbacks():
    text = "Hello {{firstName|'friend'}} {{ lastName }} <{{email}}> {{missing}}|{{flag}}|{{n}}"
    out = personalize(text, {"firstName": "", "lastName": "Doe", "email": "a@b.c", "flag": True, "n": 3.0})
    assert out == "Hello friend Doe <a@b.c> |true|3"
    assert personalize('{{firstName|"pal"}}', {}) == "pal"


def test_values_are_escaped_in_html_but_not_in_text():
    variables = {"firstName": '<script>alert("x")</script>'}
    assert personalize("<p>{{firstName}}</p>", variables, html_mode=True) == (
        "<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p>"
    )
    assert personalize("{{firstName}}", variables) == '<script>alert("x")</script>'


def test_subject_strips_cr_lf_from_template_and_values():
    assert (
        personalize_subject("Hi {{firstName}}\r\nBcc: evil@x", {"firstName": "A\nB"}) == "Hi A B Bcc: evil@x"
    )


def test_language_resolution():
    t = make(
        html_translations={
            "de": {"htmlContent": "<p>Hallo</p>", "subject": "Hallo"},
            "fr": {"htmlContent": ""},
        }
    )
    assert resolve_language(t, None) == "en"
    assert resolve_language(t, "en") == "en"
    assert resolve_language(t, "de") == "de"
    assert resolve_language(t, "de-AT") == "de-AT"  # falls back to the base language's translation
    assert resolve_language(t, "fr") == "en"  # translation without HTML → default
    assert resolve_language(t, "it") == "en"
    rendered = render_template(t, variables={"firstName": "Max"}, language="de")
    assert rendered.subject == "Hallo" and "Hallo" in rendered.html and rendered.language == "de"


def test_css_inlined_and_text_alternative():
    t = make(
        html_content="<html><head><style>.x{color:red}</style></head><body><p class='x'>Hi {{firstName}}</p>"
        "<a href='https://example.org'>Link</a><script>bad()</script></body></html>",
        plain_text_content=None,
    )
    rendered = render_template(t, variables={"firstName": "Ann"})
    assert 'style="color: red;"' in rendered.html and "<style>" not in rendered.html
    assert rendered.text == "Hi Ann\nLink (https://example.org)"


def test_plain_text_content_is_used_for_the_default_language():
    t = make(plain_text_content="Plain {{firstName}}")
    assert render_template(t, variables={"firstName": "Z"}).text == "Plain Z"


def test_edited_template_is_prepared_again():
    t = make()
    assert "Hi A" in render_template(t, variables={"firstName": "A"}).html
    t.html_content = "<p>Changed {{firstName}}</p>"
    t.updated_at = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    assert "Changed A" in render_template(t, variables={"firstName": "A"}).html


def test_html_to_text_lists_and_breaks():
    assert html_to_text("<ul><li>a</li><li>b</li></ul><p>c<br>d</p>") == "- a\n- b\nc\nd"
