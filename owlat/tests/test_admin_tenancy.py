"""D-12 admin tenancy: the active-organization switch and its resolution."""

import pytest
from django.urls import reverse

from owlat.admin_tenancy import ALL_ORGANIZATIONS, SESSION_KEY
from owlat.models import Membership, Organization
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def orgs():
    return (
        organization_create(name="Acme"),
        organization_create(name="Beta"),
        organization_create(name="Gamma"),
    )


def member(django_user_model, username, *memberships):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    for org, role in memberships:
        Membership.objects.create(user=user, organization=org, role=role)
    return user


def test_member_defaults_to_first_organization_and_sees_only_own_in_selector(client, django_user_model, orgs):
    acme, beta, gamma = orgs
    user = member(django_user_model, "ann", (beta, "editor"), (acme, "owner"))
    client.force_login(user)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    assert response.wsgi_request.active_organization == acme  # first by name
    assert client.session[SESSION_KEY] == str(acme.pk)
    html = response.content.decode()
    assert 'id="owlat-organization-switcher"' in html
    assert "Acme" in html and "Beta" in html
    assert "Gamma" not in html
    assert "All organizations" not in html


def test_member_switches_between_own_organizations(client, django_user_model, orgs):
    acme, beta, _ = orgs
    user = member(django_user_model, "ann", (acme, "owner"), (beta, "editor"))
    client.force_login(user)
    response = client.post(
        reverse("admin:owlat_switch_organization"),
        {"organization": str(beta.pk), "next": "/admin/owlat/organization/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/admin/owlat/organization/"
    response = client.get(reverse("admin:index"))
    assert response.wsgi_request.active_organization == beta
    assert response.wsgi_request.tenancy.role == "editor"


def test_member_cannot_switch_to_foreign_organization_or_all(client, django_user_model, orgs):
    acme, beta, _ = orgs
    user = member(django_user_model, "ann", (acme, "owner"))
    client.force_login(user)
    for value in (str(beta.pk), ALL_ORGANIZATIONS, "not-a-uuid"):
        client.post(reverse("admin:owlat_switch_organization"), {"organization": value})
        response = client.get(reverse("admin:index"))
        assert response.wsgi_request.active_organization == acme
        assert not response.wsgi_request.tenancy.sees_everything


def test_stale_session_choice_falls_back_to_a_membership(client, django_user_model, orgs):
    acme, beta, _ = orgs
    user = member(django_user_model, "ann", (acme, "owner"), (beta, "admin"))
    client.force_login(user)
    client.post(reverse("admin:owlat_switch_organization"), {"organization": str(beta.pk)})
    Membership.objects.filter(user=user, organization=beta).delete()
    response = client.get(reverse("admin:index"))
    assert response.wsgi_request.active_organization == acme


def test_superuser_can_pick_any_organization_or_all(client, django_user_model, orgs):
    acme, _, gamma = orgs
    root = django_user_model.objects.create_superuser(username="root", password="pw")
    client.force_login(root)
    response = client.get(reverse("admin:index"))
    assert response.wsgi_request.tenancy.sees_everything
    html = response.content.decode()
    assert "All organizations" in html and "Gamma" in html
    client.post(reverse("admin:owlat_switch_organization"), {"organization": str(gamma.pk)})
    response = client.get(reverse("admin:index"))
    assert response.wsgi_request.active_organization == gamma
    client.post(reverse("admin:owlat_switch_organization"), {"organization": ALL_ORGANIZATIONS})
    response = client.get(reverse("admin:index"))
    assert response.wsgi_request.active_organization is None
    assert response.wsgi_request.tenancy.sees_everything


def test_switch_rejects_get_and_foreign_redirect_targets(client, django_user_model, orgs):
    acme, _, _ = orgs
    user = member(django_user_model, "ann", (acme, "owner"))
    client.force_login(user)
    assert client.get(reverse("admin:owlat_switch_organization")).status_code == 405
    response = client.post(
        reverse("admin:owlat_switch_organization"),
        {"organization": str(acme.pk), "next": "https://evil.example/"},
    )
    assert response["Location"] == reverse("admin:index")


def test_switch_from_an_object_page_returns_to_its_changelist(client, django_user_model, orgs):
    acme, beta, _ = orgs
    user = member(django_user_model, "ann", (acme, "owner"), (beta, "owner"))
    client.force_login(user)
    response = client.post(
        reverse("admin:owlat_switch_organization"),
        {"organization": str(beta.pk), "next": f"/admin/owlat/organization/{acme.pk}/change/"},
    )
    assert response["Location"] == "/admin/owlat/organization/"


def test_api_requests_get_no_tenancy(client):
    response = client.get("/api/v1/health")
    assert response.wsgi_request.active_organization is None


def test_user_without_membership_sees_no_organization_data(client, django_user_model, orgs):
    user = django_user_model.objects.create_user(username="lost", password="pw", is_staff=True)
    client.force_login(user)
    response = client.get(reverse("admin:owlat_organization_changelist"))
    assert response.status_code == 403
    assert Organization.objects.count() == 3
