"""The template admin form (issue 8 item 3, DOM-13): a language picker and per-language subject/HTML fields instead
of JSON textareas; the editor JSON read-only; every error names the field and says what to do."""

from __future__ import annotations

from templates.models import EmailTemplate, TransactionalEmail


def _base(**extra):
    return {
        "name": "Welcome",
        "type": "campaign",
        "subject": "Hi {{firstName}}",
        "preview_text": "",
        "html_content": "<p>Hello</p>",
        "plain_text_content": "",
        "default_language": "en",
        **extra,
    }


def _errors(response) -> dict:
    form = response.context["adminform"].form
    return {name: [str(e) for e in errs] for name, errs in form.errors.items()}


def test_add_page_has_pickers_not_json(admin_client):
    r = admin_client.get("/admin/templates/emailtemplate/add/")
    assert r.status_code == 200
    html = r.content.decode()
    assert 'name="supported_languages"' in html and "<select" in html
    assert 'name="default_language"' in html
    assert 'name="translations"' not in html and 'name="html_translations"' not in html
    assert '<textarea name="content"' not in html  # the block editor writes it (a hidden input), never typed
    assert 'class="owlat-block-editor"' in html
    assert (
        "then fill in its subject and HTML in its Translation section" in html
    )  # the help text says what to do after picking
    assert '<option value="en" selected>en — English</option>' in html  # the default language preselected


def test_pick_a_language_then_fill_its_translation(admin_client, org):
    r = admin_client.post(
        "/admin/templates/emailtemplate/add/", _base(supported_languages=["de"], _continue="1")
    )
    assert r.status_code == 302, _errors(r)
    template = EmailTemplate.objects.get(name="Welcome")
    assert template.supported_languages == ["en", "de"] and template.html_translations == {}
    change = f"/admin/templates/emailtemplate/{template.pk}/change/"
    page = admin_client.get(change).content.decode()
    assert 'name="translation_de_subject"' in page and 'name="translation_de_html"' in page
    assert "Translation: German (de)" in page
    r = admin_client.post(
        change,
        _base(
            supported_languages=["de"],
            translation_de_subject="Hallo {{firstName}}",
            translation_de_html="<p>Hallo</p>",
        ),
    )
    assert r.status_code == 302, _errors(r)
    template.refresh_from_db()
    assert template.html_translations == {
        "de": {"subject": "Hallo {{firstName}}", "htmlContent": "<p>Hallo</p>"}
    }
    page = admin_client.get(change).content.decode()
    assert "Hallo {{firstName}}" in page and "Stored JSON (read-only)" in page
    # the preview uses the translation
    preview = admin_client.get(f"/admin/templates/emailtemplate/{template.pk}/preview/?contact=&language=de")
    assert b"Hallo" in preview.content


def test_errors_name_the_field_and_say_what_to_do(admin_client, org):
    template = EmailTemplate.objects.create(
        organization=org,
        name="Welcome",
        subject="Hi",
        html_content="<p>Hi</p>",
        supported_languages=["en", "de"],
        html_translations={"de": {"subject": "Hallo", "htmlContent": "<p>Hallo</p>"}},
        content={"blocks": [{"type": "text"}]},
        translations={"de": {"block-1": "Hallo"}},
    )
    change = f"/admin/templates/emailtemplate/{template.pk}/change/"
    page = admin_client.get(change).content.decode()
    assert "&quot;block-1&quot;" in page or '"block-1"' in page  # the editor JSON, read-only
    assert '<textarea name="content"' not in page
    # a subject without HTML is never sent
    r = admin_client.post(change, _base(supported_languages=["de"], translation_de_subject="Hallo"))
    assert r.status_code == 200
    assert _errors(r) == {
        "translation_de_html": [
            "Add the German HTML, or clear the German subject: a translation is only sent when it has HTML."
        ]
    }
    # dropping a language whose translation still has content
    r = admin_client.post(
        change, _base(supported_languages=[], translation_de_subject="Hallo", translation_de_html="<p>x</p>")
    )
    assert _errors(r) == {
        "supported_languages": [
            "German still has a translated subject or HTML: clear both German fields to remove the language, "
            "or keep German selected."
        ]
    }
    # an unknown language code
    r = admin_client.post(change, _base(supported_languages=["xx-YYYY"]))
    assert "supported_languages" in _errors(r)
    # clearing both fields, then dropping the language removes the translation
    r = admin_client.post(change, _base(supported_languages=[]))
    assert r.status_code == 302, _errors(r)
    template.refresh_from_db()
    assert template.html_translations == {} and template.supported_languages == []
    assert template.content == {"blocks": [{"type": "text"}]}  # read-only JSON untouched


def test_transactional_email_form(admin_client, org):
    r = admin_client.post(
        "/admin/templates/transactionalemail/add/",
        {
            "slug": "reset",
            "name": "Reset",
            "subject": "Reset",
            "html_content": "<p>x</p>",
            "plain_text_content": "",
            "default_language": "de",
            "supported_languages": ["fr", "de"],
        },
    )
    assert r.status_code == 302, _errors(r)
    email = TransactionalEmail.objects.get(slug="reset")
    assert email.default_language == "de" and email.supported_languages == ["de", "fr"]
    page = admin_client.get(f"/admin/templates/transactionalemail/{email.pk}/change/").content.decode()
    assert 'name="translation_fr_html"' in page and 'name="translation_de_html"' not in page
