"""The admin CSV import (owlat/forms/imports.py): good rows imported, each bad row listed with its line."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from owlat.models import Contact, ContactPropertyValue, Membership
from owlat.organizations import organization_create
from testsupport.imports import import_csv, upload_csv

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
    preview = upload_csv(client, csv).content.decode()
    assert "not-an-address" in preview and not Contact.objects.exists()  # shown, nothing written yet
    r = import_csv(client, csv)
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
    html = import_csv(client, "name\nAda\n").content.decode()
    assert "Choose the column that holds the email address." in html and not Contact.objects.exists()
    html = upload_csv(client, "").content.decode()
    assert "CSV file: " in html
    bad = SimpleUploadedFile("x.csv", b"email\n\xff\xfe@x\n", content_type="text/csv")
    html = client.post(url, {"file": bad}).content.decode()
    assert "CSV file: The file is not UTF-8 text" in html


def test_viewers_may_not_import(client, django_user_model):
    org = organization_create(name="Acme")
    login(client, django_user_model, org, "viewer")
    assert client.get(reverse("admin:owlat_contact_import")).status_code == 403


def test_columns_are_mapped_renamed_or_ignored_before_the_import(client, django_user_model):
    org = organization_create(name="Acme")
    login(client, django_user_model, org, "owner")
    from owlat.models import ContactProperty

    ContactProperty.objects.create(organization=org, key="customer_id", label="Customer number")
    csv = "E-Mail Address,Vorname,Kundennummer,Notes\nada@example.com,Ada,K-1,call her\n"
    page = upload_csv(client, csv).content.decode()
    assert "Customer number (customer_id)" in page
    assert "E-Mail Address" in page and "K-1" in page and "a new custom property" in page
    html = import_csv(client, csv, mapping=["email", "first_name", "customer_id", ""]).content.decode()
    assert "1 created" in html
    ada = Contact.objects.get(organization=org, email="ada@example.com")
    assert ada.first_name == "Ada"
    values = dict(ContactPropertyValue.objects.filter(contact=ada).values_list("property__key", "value"))
    assert values == {
        "customer_id": "K-1"
    }  # read into an existing property; the ignored column is not stored
    refused = import_csv(client, csv, mapping=["email", "first_name", "made_up", ""]).content.decode()
    assert "Select a valid choice" in refused  # only the offered properties


def test_a_mapping_that_reads_two_columns_as_one_field_is_refused(client, django_user_model):
    org = organization_create(name="Acme")
    login(client, django_user_model, org, "owner")
    csv = "a,b\nada@example.com,grace@example.com\n"
    html = import_csv(client, csv, mapping=["email", "email"]).content.decode()
    assert "are both read as email: choose one." in html and not Contact.objects.exists()


def test_the_pending_file_belongs_to_its_organization(client, django_user_model):
    from owlat.import_pending import pending_load, pending_store

    org = organization_create(name="Acme")
    other = organization_create(name="Beta")
    token = pending_store(org.pk, "email\nada@example.com\n", "x.csv")
    assert pending_load(other.pk, token) is None
    assert pending_load(org.pk, token + "x") is None
    assert pending_load(org.pk, token) == ("email\nada@example.com\n", "x.csv")
