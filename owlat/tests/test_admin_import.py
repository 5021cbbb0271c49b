"""The admin CSV import (owlat/forms/imports.py): good rows imported, each bad row listed with its line."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from owlat.models import Contact, Membership
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


def login(client, django_user_model, org, role):
    user = django_user_model.objects.create_user(username=role, password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role=role)
    client.force_login(user)


def upload(text: str, name: str = "contacts.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/csv")


def test_import_lists_the_bad_row_and_imports_the_others(client, django_user_model):
    org = organization_create(name="Acme")
    login(client, django_user_model, org, "owner")
    url = reverse("admin:owlat_contact_import")
    assert client.get(url).status_code == 200
    csv = "email,first_name\nada@example.com,Ada\nnot-an-address,Bad\ngrace@example.com,Grace\n"
    r = client.post(url, {"file": upload(csv), "mode": "upsert"})
    html = r.content.decode()
    assert r.status_code == 200
    assert "Line 3: Invalid email format: not-an-address" in html and "2 created" in html
    assert set(Contact.objects.filter(organization=org).values_list("email", flat=True)) == {
        "ada@example.com",
        "grace@example.com",
    }


def test_import_errors_name_the_field(client, django_user_model):
    org = organization_create(name="Acme")
    login(client, django_user_model, org, "owner")
    url = reverse("admin:owlat_contact_import")
    html = client.post(url, {"mode": "upsert"}).content.decode()
    assert "CSV file: Choose the CSV file to import." in html
    html = client.post(url, {"file": upload("name\nAda\n"), "mode": "upsert"}).content.decode()
    assert "CSV file: " in html and not Contact.objects.exists()
    bad = SimpleUploadedFile("x.csv", b"email\n\xff\xfe@x\n", content_type="text/csv")
    html = client.post(url, {"file": bad, "mode": "upsert"}).content.decode()
    assert "CSV file: The file is not UTF-8 text" in html


def test_viewers_may_not_import(client, django_user_model):
    org = organization_create(name="Acme")
    login(client, django_user_model, org, "viewer")
    assert client.get(reverse("admin:owlat_contact_import")).status_code == 403
