"""The preview's warnings about personalization (templates.preview): a variable without a fallback that the
previewed contact (or the sample) lacks is named, with where it is and the fallback that would fill it."""

from __future__ import annotations

import pytest

from templates.preview import missing_variable_warnings, template_preview

pytestmark = pytest.mark.django_db


def _template(org, **fields):
    from templates.models import EmailTemplate

    values = {"name": "T", "subject": "Hello {{firstName}}", "html_content": "<p>Hi {{firstName}}</p>"}
    return EmailTemplate.objects.create(organization=org, **{**values, **fields})


def _contact(org, **fields):
    from owlat.models import Contact

    return Contact.objects.create(organization=org, email="ann@acme.test", **fields)


def test_a_contact_without_a_first_name_is_warned_about_with_where_and_a_fallback(org):
    template = _template(org, preview_text="For {{firstName}}")
    warnings = template_preview(template, contact=_contact(org)).warnings
    [warning] = [w for w in warnings if "{{firstName}}" in w]
    assert warning.startswith("ann@acme.test has no first name: {{firstName}} in the subject")
    assert "the subject and the preheader and the body is sent empty" in warning
    assert "{{firstName|'there'}}" in warning and "fill in the contact's first name" in warning


def test_no_warning_when_the_contact_has_the_value_or_the_template_a_fallback(org):
    contact = _contact(org, first_name="Ann")
    assert not [w for w in template_preview(_template(org), contact=contact).warnings if "{{" in w]
    contact.first_name = ""
    contact.save(update_fields=["first_name"])
    fallback = _template(
        org, subject="Hello {{firstName|'you'}}", html_content='<p>Hi {{ firstName | "you" }}</p>'
    )
    assert not [w for w in template_preview(fallback, contact=contact).warnings if "first name" in w]


def test_the_sample_warns_what_a_contact_without_the_value_gets(org):
    warnings = template_preview(_template(org, subject="News"), contact=None).warnings
    assert any(
        w.startswith("A contact without a first name: {{firstName}} in the body is sent empty")
        for w in warnings
    )


def test_an_unknown_variable_is_named_and_send_time_links_are_not(org):
    template = _template(
        org,
        subject="News",
        html_content="<p>{{frstName}} <a href='{{unsubscribeUrl}}'>x</a> {{viewInBrowserUrl}}</p>",
    )
    warnings = template_preview(template, contact=_contact(org, first_name="Ann")).warnings
    assert [w for w in warnings if "{{" in w] == [
        "{{frstName}} in the body is not a variable Owlat fills in: it is sent empty. Use one of {{firstName}}, "
        "{{lastName}}, {{email}}, or give it a fallback, {{frstName|'…'}}."
    ]


def test_a_missing_postal_address_and_a_transactional_data_variable_are_explained(org):
    from templates.models import TransactionalEmail
    from templates.rendering import prepare_template

    org.postal_address = ""
    org.save(update_fields=["postal_address"])
    warnings = template_preview(
        _template(org, subject="News", html_content="<p>{{postalAddress}}</p>")
    ).warnings
    assert any(
        w.startswith("{{postalAddress}} in the body is empty: set the organization's postal address")
        for w in warnings
    )
    email = TransactionalEmail.objects.create(
        organization=org, slug="receipt", name="Receipt", subject="Order {{orderId}}", html_content="<p>x</p>"
    )
    [warning] = missing_variable_warnings(prepare_template(email), {"email": "a@b.test"}, transactional=True)
    assert warning.startswith("{{orderId}} in the subject comes from the send request's dataVariables")


def test_the_preview_page_lists_the_warning(admin_client, org):
    template = _template(org)
    _contact(org)
    page = admin_client.get(f"/admin/templates/emailtemplate/{template.pk}/preview/")
    assert page.status_code == 200
    assert "ann@acme.test has no first name" in page.content.decode()
