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


def test_member_defaults_to_the_organization_joined_first_and_sees_only_own_in_selector(
    client, django_user_model, orgs
):
    acme, beta, gamma = orgs
    user = member(django_user_model, "ann", (beta, "editor"), (acme, "owner"))
    client.force_login(user)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    # never chosen yet: the one joined first, not the first by name (a name is the inviter's to pick)
    assert response.wsgi_request.active_organization == beta
    assert client.session[SESSION_KEY] == str(beta.pk)
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


# --- the base classes, as other apps' admins use them ----------------------------------------------------------


class _EventEditAdmin(__import__("owlat.admin_tenancy", fromlist=["TenantModelAdmin"]).TenantModelAdmin):
    """An editable admin for a model with tenant foreign keys (like a campaign's topic)."""

    manage_permission = "contacts:manage"
    fields = ("contact", "property", "value")


def _request(user, session_value=None):
    from django.contrib.sessions.backends.db import SessionStore
    from django.test import RequestFactory

    from owlat.admin_tenancy import get_tenancy

    request = RequestFactory().get("/admin/")
    request.user = user
    request.session = SessionStore()
    if session_value:
        request.session[SESSION_KEY] = session_value
    get_tenancy(request)
    return request


@pytest.fixture
def two_orgs_with_contacts(orgs):
    from owlat.contacts import contact_find_or_create

    acme, beta, _ = orgs
    a, _ = contact_find_or_create(organization_id=acme.pk, email="a@example.com", source="api", actor="t")
    b, _ = contact_find_or_create(organization_id=beta.pk, email="b@example.com", source="api", actor="t")
    return acme, beta, a, b


def test_mixin_filters_foreign_key_choices_and_rejects_forged_ids(django_user_model, two_orgs_with_contacts):
    from django.contrib import admin

    from owlat.models import ContactProperty, ContactPropertyValue

    acme, beta, a, b = two_orgs_with_contacts
    pa = ContactProperty.objects.create(organization=acme, key="plan")
    pb = ContactProperty.objects.create(organization=beta, key="plan")
    user = member(django_user_model, "ann", (acme, "admin"))
    request = _request(user)
    model_admin = _EventEditAdmin(ContactPropertyValue, admin.site)
    choices = model_admin.get_field_queryset(None, ContactPropertyValue._meta.get_field("contact"), request)
    assert list(choices) == [a]
    form_class = model_admin.get_form(request)
    form = form_class(data={"contact": str(b.pk), "property": str(pb.pk), "value": "x"})
    assert not form.is_valid()
    assert "contact" in form.errors and "property" in form.errors
    data = {"contact": str(a.pk), "property": str(pa.pk), "value": "x", "organization": str(beta.pk)}
    form = form_class(data=data)
    assert form.is_valid(), form.errors
    row = form.save(commit=False)
    model_admin.save_model(request, row, form, change=False)
    # the disabled organization field ignores the posted value: the row lands in the active organization
    assert ContactPropertyValue.objects.get(contact=a).organization_id == acme.pk


def test_mixin_in_all_mode_rejects_references_across_organizations(django_user_model, two_orgs_with_contacts):
    from django.contrib import admin

    from owlat.models import ContactProperty, ContactPropertyValue

    acme, beta, a, b = two_orgs_with_contacts
    ContactProperty.objects.create(organization=acme, key="plan")
    pb = ContactProperty.objects.create(organization=beta, key="plan")
    root = django_user_model.objects.create_superuser(username="root", password="pw")
    request = _request(root, ALL_ORGANIZATIONS)
    model_admin = _EventEditAdmin(ContactPropertyValue, admin.site)
    form_class = model_admin.get_form(request)
    data = {"contact": str(b.pk), "property": str(pb.pk), "value": "x", "organization": str(acme.pk)}
    form = form_class(data=data)
    assert not form.is_valid()
    assert form.errors["contact"] == ["Select an item of the same organization."]
    assert form.errors["property"] == ["Select an item of the same organization."]
    form = form_class(data={**data, "organization": str(beta.pk)})
    assert form.is_valid(), form.errors


def test_mixin_role_mapping(django_user_model, orgs):
    from django.contrib import admin

    from owlat.models import ContactPropertyValue

    acme, _, _ = orgs
    model_admin = _EventEditAdmin(ContactPropertyValue, admin.site)
    for role, can_manage in (("owner", True), ("admin", True), ("editor", False)):
        user = member(django_user_model, f"u-{role}", (acme, role))
        request = _request(user)
        assert model_admin.has_view_permission(request)
        assert model_admin.has_add_permission(request) is can_manage
        assert model_admin.has_change_permission(request) is can_manage
        assert model_admin.has_delete_permission(request) is can_manage
    outsider = django_user_model.objects.create_user(username="out", password="pw", is_staff=True)
    request = _request(outsider)
    assert not model_admin.has_view_permission(request)
    assert not model_admin.has_module_permission(request)
    assert model_admin.get_queryset(request).count() == 0
