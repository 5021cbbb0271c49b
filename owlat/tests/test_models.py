import pytest
from django.db import IntegrityError

from owlat.models import Contact, Organization


@pytest.mark.django_db
def test_live_contact_email_is_unique_per_organization():
    org = Organization.objects.create(name="A")
    other = Organization.objects.create(name="B")
    Contact.objects.create(organization=org, email="a@example.com")
    Contact.objects.create(organization=other, email="a@example.com")
    with pytest.raises(IntegrityError):
        Contact.objects.create(organization=org, email="a@example.com")
