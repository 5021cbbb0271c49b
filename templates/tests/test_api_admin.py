"""Templates API (API-26), template lifecycle and the template admin (preview, send test)."""

from __future__ import annotations

import uuid

import pytest

from owlat.models import AuditLog, Contact
from templates.models import EmailTemplate, TransactionalEmail
from testsupport.api import ApiClient, error_of, make_key, make_org


@pytest.fixture
def api(org):
    _, raw = make_key(org, ["templates:read", "templates:write"])
    return ApiClient(raw)


def test_create_read_update_publish_delete(api, org):
    r = api.post("/templates", {"name": "Welcome", "subject": "Hi {{firstName}}"})
    assert r.status_code == 201, r.content
    data = r.json()["data"]
    assert data["status"] == "draft" and data["content"] is None and data["htmlContent"] is None
    tid = data["id"]
    # publishing without HTML is refused
    r = api.post(f"/templates/{tid}/publish")
    assert r.status_code == 422 and error_of(r)["data"]["reason"] == "template_no_content"
    r = api.patch(f"/templates/{tid}", {"htmlContent": "<p>Hi</p>", "defaultLanguage": "de"})
    assert r.status_code == 200 and r.json()["data"]["defaultLanguage"] == "de"
    r = api.post(f"/templates/{tid}/publish")
    assert r.status_code == 200
    assert r.json()["transition"] == {"applied": "transitioned", "from": "draft", "to": "published"}
    assert api.post(f"/templates/{tid}/publish").json()["transition"]["applied"] == "recorded"
    assert api.put(f"/templates/{tid}", {"status": "draft"}).status_code == 400
    listed = api.get("/templates?status=published&search=welc").json()
    assert [t["id"] for t in listed["data"]] == [tid]
    assert "htmlContent" not in listed["data"][0] and "name" in listed["data"][0]
    assert api.post(f"/templates/{tid}/unpublish").json()["data"]["status"] == "draft"
    assert api.delete(f"/templates/{tid}").json() == {"data": {"id": tid, "deleted": True}}
    assert api.get(f"/templates/{tid}").status_code == 404
    assert api.get("/templates/nope").status_code == 400
    actions = set(AuditLog.objects.filter(resource="email_template").values_list("action", flat=True))
    assert {
        "template.created",
        "template.updated",
        "template.published",
        "template.unpublished",
        "template.deleted",
    } <= actions


def test_validation_and_in_use(api, org):
    assert error_of(api.post("/templates", {"subject": "s"}))["message"] == "name is required"
    assert error_of(api.post("/templates", {"name": "n"}))["message"] == "subject is required"
    assert (
        error_of(api.post("/templates", {"name": "n", "subject": "s", "type": "x"}))["data"]["field"]
        == "type"
    )
    from owlat import inuse
    from templates import services

    tid = api.post("/templates", {"name": "n", "subject": "s"}).json()["data"]["id"]
    checker = services.register_template_in_use(lambda org_id, t_id: [{"kind": "automation", "id": "a1"}])
    try:
        r = api.delete(f"/templates/{tid}")
        assert r.status_code == 422
        assert error_of(r)["data"] == {
            "reason": "template_in_use",
            "usedBy": [{"kind": "automation", "id": "a1"}],
        }
    finally:
        inuse.templates.unregister(checker)
    other = make_org(name="Other")
    _, raw = make_key(other, ["templates:read"])
    assert ApiClient(raw).get(f"/templates/{tid}").status_code == 404


def test_admin_preview_for_a_contact_and_language(admin_client, org):
    template = EmailTemplate.objects.create(
        organization=org,
        name="T",
        subject="Hi {{firstName}}",
        html_content="<p>Hello {{firstName}}</p>",
        html_translations={
            "de": {"htmlContent": "<p>Hallo {{firstName}}</p>", "subject": "Hallo {{firstName}}"}
        },
    )
    contact = Contact.objects.create(organization=org, email="k@example.com", first_name="Kai")
    r = admin_client.get(
        f"/admin/templates/emailtemplate/{template.pk}/preview/?contact={contact.pk}&language=de"
    )
    assert r.status_code == 200
    assert b"Hallo Kai" in r.content
    r = admin_client.get(f"/admin/templates/emailtemplate/{template.pk}/change/")
    assert b"/preview/" in r.content and b"/send-test/" in r.content


def test_admin_send_test_email(admin_client, org, settings):
    settings.EMAIL_PROVIDER = "local"
    template = TransactionalEmail.objects.create(
        organization=org,
        slug="welcome",
        name="W",
        subject="Welcome {{firstName|'you'}}",
        html_content="<p>x</p>",
    )
    r = admin_client.post(
        f"/admin/templates/transactionalemail/{template.pk}/send-test/",
        {"to": "me@example.com", "language": "en"},
    )
    assert r.status_code == 302
    from delivery.models import TransactionalSend

    send = TransactionalSend.objects.get()
    assert (send.kind, send.email, send.subject) == ("test", "me@example.com", "Welcome you")


def test_admin_publish_action_goes_through_the_lifecycle(admin_client, org):
    template = EmailTemplate.objects.create(organization=org, name="T", subject="s", html_content="<p>x</p>")
    empty = EmailTemplate.objects.create(organization=org, name="E", subject="s")
    r = admin_client.post(
        "/admin/templates/emailtemplate/",
        {"action": "publish", "_selected_action": [str(template.pk), str(empty.pk)]},
        follow=True,
    )
    assert r.status_code == 200
    template.refresh_from_db()
    empty.refresh_from_db()
    assert template.status == "published" and empty.status == "draft"
    assert uuid.UUID(str(template.pk))
