"""The sign-up form builder in the back-office: topics, fields and translations as rows, the embed snippet,
the numbers per day."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from owlat.models import (
    ContactProperty,
    Membership,
    SignupForm,
    SignupFormField,
    SignupFormTopic,
    Topic,
)
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client, django_user_model, settings):
    settings.SITE_URL = "http://testserver"
    settings.EMAIL_PROVIDER = "local"
    org = organization_create(name="Acme")
    user = django_user_model.objects.create_user(username="owner", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return org


def _inline(prefix: str, rows: list[dict]) -> dict:
    data = {f"{prefix}-TOTAL_FORMS": str(len(rows)), f"{prefix}-INITIAL_FORMS": "0"}
    for i, row in enumerate(rows):
        data.update({f"{prefix}-{i}-{k}": v for k, v in row.items()})
    return data


def _post(org, news, prop, **overrides):
    data = {
        "name": "Website footer",
        "is_active": "on",
        "require_double_opt_in": "on",
        "title": "Join us",
        "description": "",
        "consent_text": "I agree.",
        "submit_label": "Subscribe",
        "brand_color": "#0f766e",
        "pending_message": "Check your inbox.",
        "success_message": "Done.",
        "confirmed_message": "Confirmed.",
        "allowed_origins": "https://www.acme.test",
        **_inline("form_topics", [{"topic": str(news.pk), "preselected": "on", "position": "0"}]),
        **_inline(
            "fields",
            [
                {"kind": "first_name", "label": "", "position": "0"},
                {
                    "kind": "property",
                    "property": str(prop.pk),
                    "label": "Plan",
                    "required": "on",
                    "position": "1",
                },
            ],
        ),
        **_inline("texts", [{"language": "de", "title": "Mach mit"}]),
    }
    data.update(overrides)
    return data


def test_owner_builds_a_form_and_gets_its_snippet(client, owner):
    news = Topic.objects.create(organization=owner, name="News")
    prop = ContactProperty.objects.create(organization=owner, key="plan", type="string")
    r = client.post(reverse("admin:owlat_signupform_add"), _post(owner, news, prop))
    assert r.status_code == 302, r.content.decode()[:3000]
    form = SignupForm.objects.get(organization=owner)
    assert list(SignupFormTopic.objects.filter(form=form).values_list("topic__name", flat=True)) == ["News"]
    assert [f.kind for f in SignupFormField.objects.filter(form=form)] == ["first_name", "property"]
    assert form.texts.get().title == "Mach mit"

    page = client.get(reverse("admin:owlat_signupform_change", args=[form.pk])).content.decode()
    assert f"http://testserver/forms/{form.pk}/" in page  # the public link
    assert "Copy snippet" in page and "owlat/signup/copy.js" in page
    assert "&lt;form id=&quot;owlat-form-" in page  # the snippet, escaped inside its textarea
    assert "signup-chart" in page


def test_snippet_posts_to_the_hosted_page_and_escapes_operator_text(owner):
    from owlat.signup.embed import embed_snippet

    news = Topic.objects.create(organization=owner, name="<b>News</b>")
    form = SignupForm.objects.create(organization=owner, name="F", consent_text="<script>x</script>")
    SignupFormTopic.objects.create(organization=owner, form=form, topic=news)
    snippet = embed_snippet(form)
    assert f'action="http://testserver/forms/{form.pk}/"' in snippet
    assert 'name="website"' in snippet and 'name="_ts"' in snippet and "timestamp.json" in snippet
    assert "<script>x" not in snippet and "&lt;script&gt;x" in snippet


def test_property_fields_need_their_property_and_origins_must_be_origins(client, owner):
    news = Topic.objects.create(organization=owner, name="News")
    prop = ContactProperty.objects.create(organization=owner, key="plan", type="string")
    data = _post(owner, news, prop, **{"fields-1-property": "", "allowed_origins": "https://a.test/page"})
    r = client.post(reverse("admin:owlat_signupform_add"), data)
    assert r.status_code == 200
    page = r.content.decode()
    assert "Pick the contact property this field fills." in page
    assert "is not an origin" in page
    assert not SignupForm.objects.exists()


def test_changelist_counts_submissions_and_conversion(client, owner, settings):
    from owlat.signup import guards

    settings.SIGNUP_IP_BURST = 100
    news = Topic.objects.create(organization=owner, name="News", require_double_opt_in=False)
    form = SignupForm.objects.create(organization=owner, name="Footer", require_double_opt_in=False)
    SignupFormTopic.objects.create(organization=owner, form=form, topic=news)
    for i, extra in enumerate([{}, {}, {"website": "x"}, {}]):
        ts = guards.timestamp_new(form.pk, now=time.time() - 10)
        client.post(f"/forms/{form.pk}/", {"email": f"p{i}@example.com", "_ts": ts, **extra})
    page = client.get(reverse("admin:owlat_signupform_changelist")).content.decode()
    assert "75%" in page  # 3 of 4 submissions joined
    change = client.get(reverse("admin:owlat_signupform_change", args=[form.pk])).content.decode()
    assert "refused: honeypot" in change


def test_a_form_a_segment_asks_about_cannot_be_deleted_in_the_admin(client, owner):
    from owlat.models import Segment

    form = SignupForm.objects.create(organization=owner, name="Footer")
    condition = {"kind": "signup_form", "formId": str(form.pk), "operator": "equals"}
    Segment.objects.create(
        organization=owner, name="Joined by form", filters={"logic": "AND", "conditions": [condition]}
    )
    response = client.post(f"/admin/owlat/signupform/{form.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert SignupForm.objects.filter(pk=form.pk).exists()
    client.post(
        "/admin/owlat/signupform/",
        {"action": "delete_selected", "_selected_action": [str(form.pk)], "post": "yes"},
    )
    assert SignupForm.objects.filter(pk=form.pk).exists()
