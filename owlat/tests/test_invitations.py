"""Membership by invitation: the inviter's answer never tells whether an account exists, nothing about another
account changes until its holder accepts, and after signing in a member lands where they chose last."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from owlat.admin_tenancy.access import SESSION_KEY
from owlat.invitations import invitation_token
from owlat.models import Invitation, Membership
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme(django_user_model, settings):
    settings.EMAIL_PROVIDER = "local"
    settings.SITE_URL = "http://testserver"
    org = organization_create(name="Acme", default_from_email="hello@acme.test")
    owner = django_user_model.objects.create_user("olivia", "olivia@acme.test", "pw", is_staff=True)
    Membership.objects.create(user=owner, organization=org, role="owner")
    return {"org": org, "owner": owner}


def _invite(client, org, invitee, role="editor"):
    """The organization page's POST with one new invitation row (as the admin's form sends it)."""
    members = list(Membership.objects.filter(organization=org))
    data = {"name": org.name, "postal_address": "", "memberships-TOTAL_FORMS": str(len(members))}
    data["memberships-INITIAL_FORMS"] = str(len(members))
    for i, m in enumerate(members):
        data.update({f"memberships-{i}-id": str(m.pk), f"memberships-{i}-role": m.role})
        data[f"memberships-{i}-organization"] = str(org.pk)
    data.update({"invitations-TOTAL_FORMS": "1", "invitations-INITIAL_FORMS": "0"})
    data.update({"invitations-0-invitee": invitee, "invitations-0-role": role})
    data["invitations-0-organization"] = str(org.pk)
    response = client.post(reverse("admin:owlat_organization_change", args=[org.pk]), data)
    assert response.status_code == 302, response.context and response.context["errors"]
    return [str(m) for m in get_messages(response.wsgi_request) if "Invitation for" in str(m)]


def test_the_answer_is_the_same_whether_or_not_the_account_exists_and_nothing_changes(
    client, acme, django_user_model, django_capture_on_commit_callbacks
):
    from delivery.models import TransactionalSend

    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw")
    client.force_login(acme["owner"])
    with django_capture_on_commit_callbacks(execute=True):
        known = _invite(client, acme["org"], "Bob@Example.com")
        unknown = _invite(client, acme["org"], "nobody@example.com")
    assert known[-1].replace("bob@example.com", "X") == unknown[-1].replace("nobody@example.com", "X")
    assert "Nothing changes for them until they accept" in known[-1]
    bob.refresh_from_db()
    assert not bob.is_staff and not Membership.objects.filter(user=bob).exists()
    assert set(Invitation.objects.values_list("invitee", "status")) == {
        ("bob@example.com", "pending"),
        ("nobody@example.com", "pending"),
    }
    mails = TransactionalSend.objects.filter(correlation_id="invitation").order_by("email")
    assert [m.email for m in mails] == ["bob@example.com", "nobody@example.com"]  # an email link to both
    assert re.search(r"http://testserver/invitations/[^/\s]+/", mails[0].text_body)


def test_an_editor_cannot_invite_and_an_admin_cannot_invite_an_owner(client, acme, django_user_model):
    editor = django_user_model.objects.create_user("ed", password="pw", is_staff=True)
    Membership.objects.create(user=editor, organization=acme["org"], role="editor")
    admin_user = django_user_model.objects.create_user("ada", password="pw", is_staff=True)
    Membership.objects.create(user=admin_user, organization=acme["org"], role="admin")
    client.force_login(editor)
    url = reverse("admin:owlat_organization_change", args=[acme["org"].pk])
    assert client.post(
        url, {"invitations-TOTAL_FORMS": "1", "invitations-0-invitee": "x@y.z"}
    ).status_code in (
        302,
        403,
    )
    client.force_login(admin_user)
    page = client.get(url).content.decode()
    assert (
        'name="invitations-__prefix__-invitee"' in page and "Username or email" in page
    )  # a form, with help
    with pytest.raises(AssertionError):
        _invite(client, acme["org"], "boss@example.com", role="owner")
    assert not Invitation.objects.exists()


def test_the_invitee_accepts_on_the_invitations_page_and_lands_in_the_organization(
    client, acme, django_user_model
):
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw")
    client.force_login(acme["owner"])
    _invite(client, acme["org"], "bob")
    client.logout()
    # the admin login tells an account without access where its invitation waits
    login = client.post(reverse("admin:login"), {"username": "bob", "password": "pw"})
    assert "/invitations/login/" in login.content.decode()
    response = client.post(
        reverse("owlat-invitations-login"), {"username": "bob", "password": "pw"}, follow=True
    )
    page = response.content.decode()
    assert (
        "Acme</strong> invites you to join as <strong>editor" in page and "Declining changes nothing" in page
    )
    invitation = Invitation.objects.get()
    response = client.post(
        reverse("owlat-invitations"), {"invitation": str(invitation.pk), "decision": "accept"}
    )
    assert response["Location"] == reverse("admin:index")
    bob.refresh_from_db()
    assert bob.is_staff and Membership.objects.get(user=bob).organization == acme["org"]
    assert client.get(reverse("admin:index")).wsgi_request.active_organization == acme["org"]
    invitation.refresh_from_db()
    assert invitation.status == "accepted" and invitation.accepted_by == bob


def test_another_account_an_answered_or_an_expired_invitation_cannot_be_accepted(
    client, acme, django_user_model
):
    from owlat.invitations import invitation_create

    mallory = django_user_model.objects.create_user("mallory", "mallory@example.com", "pw")
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw")
    invitation = invitation_create(
        organization=acme["org"], invitee="bob", role="owner", invited_by=acme["owner"]
    )
    client.force_login(mallory)
    assert "invites you" not in client.get(reverse("owlat-invitations")).content.decode()
    answer = client.post(
        reverse("owlat-invitations"), {"invitation": str(invitation.pk), "decision": "accept"}, follow=True
    )
    assert "not open for your account" in answer.content.decode()
    link = client.get(reverse("owlat-invitation-link", args=[invitation_token(invitation)]), follow=True)
    assert "not open for your account" in link.content.decode()
    assert not Membership.objects.filter(user=mallory).exists()
    client.post(reverse("owlat-invitations"), {"invitation": "not-a-uuid", "decision": "accept"})
    # declined, then too late to accept
    client.force_login(bob)
    client.post(reverse("owlat-invitations"), {"invitation": str(invitation.pk), "decision": "decline"})
    assert Invitation.objects.get().status == "declined"
    client.post(reverse("owlat-invitations"), {"invitation": str(invitation.pk), "decision": "accept"})
    assert not Membership.objects.filter(user=bob).exists()
    old = invitation_create(organization=acme["org"], invitee="bob", role="editor", invited_by=acme["owner"])
    Invitation.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=15))
    client.post(reverse("owlat-invitations"), {"invitation": str(old.pk), "decision": "accept"})
    assert not Membership.objects.filter(user=bob).exists()
    assert not django_user_model.objects.get(pk=bob.pk).is_staff


def test_after_signing_in_a_member_lands_where_they_chose_last(client, acme, django_user_model):
    beta = organization_create(name="AAA Beta")  # first by name: no longer where anyone lands by default
    ann = django_user_model.objects.create_user("ann", password="pw", is_staff=True)
    Membership.objects.create(user=ann, organization=acme["org"], role="editor")
    Membership.objects.create(user=ann, organization=beta, role="editor")
    client.force_login(ann)
    assert client.get(reverse("admin:index")).wsgi_request.active_organization == acme["org"]  # joined first
    client.post(reverse("admin:owlat_switch_organization"), {"organization": str(beta.pk)})
    client.logout()
    client.force_login(ann)
    assert SESSION_KEY not in client.session
    assert client.get(reverse("admin:index")).wsgi_request.active_organization == beta


def _page_post(org, members, invitations):
    """The organization page's POST as the admin sends it: every member and open invitation row as shown."""
    data = {"name": org.name, "postal_address": "", "_save": "Save"}
    data.update(
        {"memberships-TOTAL_FORMS": str(len(members)), "memberships-INITIAL_FORMS": str(len(members))}
    )
    for i, m in enumerate(members):
        data.update({f"memberships-{i}-id": str(m.pk), f"memberships-{i}-role": m.role})
        data[f"memberships-{i}-organization"] = str(org.pk)
    data.update(
        {"invitations-TOTAL_FORMS": str(len(invitations)), "invitations-INITIAL_FORMS": str(len(invitations))}
    )
    for i, inv in enumerate(invitations):
        data.update({f"invitations-{i}-id": str(inv.pk), f"invitations-{i}-role": inv.role})
        data[f"invitations-{i}-organization"] = str(org.pk)
    return data


def test_removing_a_member_or_withdrawing_an_invitation_asks_first_and_is_audited(
    client, acme, django_user_model
):
    from owlat.invitations import invitation_create
    from owlat.models import AuditLog

    org = acme["org"]
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw")
    bob_member = Membership.objects.create(user=bob, organization=org, role="editor")
    ivy = invitation_create(
        organization=org, invitee="ivy@example.com", role="editor", invited_by=acme["owner"]
    )
    members = list(Membership.objects.filter(organization=org).order_by("created_at"))
    data = _page_post(org, members, [ivy])
    data[f"memberships-{members.index(bob_member)}-DELETE"] = "on"
    data["invitations-0-DELETE"] = "on"
    url = reverse("admin:owlat_organization_change", args=[org.pk])
    client.force_login(acme["owner"])

    # Given the owner ticks Delete on bob's row and ivy's invitation, the page asks and names the consequences
    page = client.post(url, data)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Remove members?" in html and "bob" in html and "ivy@example.com" in html
    assert "lose access to this organization at once" in html and "links stop working" in html
    assert Membership.objects.filter(pk=bob_member.pk).exists()
    assert Invitation.objects.filter(pk=ivy.pk).exists()

    # When they confirm (the same form, posted again), bob is removed, ivy's invitation withdrawn, both audited
    confirmed = dict(page.context["fields"]) | {"_confirm_removal": "1"}
    assert client.post(url, confirmed).status_code == 302
    assert not Membership.objects.filter(pk=bob_member.pk).exists()
    assert not Invitation.objects.filter(pk=ivy.pk).exists()
    audited = dict(AuditLog.objects.filter(organization=org).values_list("action", "details__who"))
    assert audited["member_removed"] == "bob" and audited["invitation_withdrawn"] == "ivy@example.com"
    assert bob.memberships.count() == 0 and django_user_model.objects.filter(pk=bob.pk).exists()


def test_the_confirmation_never_names_another_organizations_people(client, acme, django_user_model):
    other = organization_create(name="Beta")
    mallory = django_user_model.objects.create_user("mallory", "m@beta.test", "pw", is_staff=True)
    Membership.objects.create(user=mallory, organization=other, role="owner")
    bob = django_user_model.objects.create_user("bob", "bob@example.com", "pw")
    bob_member = Membership.objects.create(user=bob, organization=acme["org"], role="editor")
    data = _page_post(other, list(Membership.objects.filter(organization=other)), [])
    data.update({"memberships-TOTAL_FORMS": "2", "memberships-INITIAL_FORMS": "2"})
    data.update(
        {"memberships-1-id": str(bob_member.pk), "memberships-1-role": "editor", "memberships-1-DELETE": "on"}
    )
    client.force_login(mallory)
    response = client.post(reverse("admin:owlat_organization_change", args=[other.pk]), data)
    assert "Remove members?" not in response.content.decode() and "bob" not in response.content.decode()
    assert Membership.objects.filter(pk=bob_member.pk).exists()
