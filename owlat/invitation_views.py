"""`/invitations/`: where an invited person, signed in, accepts or declines their invitations (owlat.invitations).

Outside the admin on purpose: an invitee without admin access yet (no membership, not staff) must be able to
sign in here. The email link `/invitations/<token>/` leads to the same page; a token for another account, an
answered or an expired invitation all get the same answer."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from owlat.invitations import (
    SESSION_WAITING,
    InvitationError,
    invitation_accept,
    invitation_decline,
    invitation_from_token,
    invitations_for,
)

LOGIN_URL = "/invitations/login/"


class InvitationLoginView(LoginView):
    template_name = "owlat/invitations/login.html"
    redirect_authenticated_user = True
    extra_context = {"title": "Sign in to see your invitations"}

    def get_default_redirect_url(self) -> str:
        return reverse("owlat-invitations")


@login_required(login_url=LOGIN_URL)
@require_http_methods(["GET", "POST"])
def invitations_view(request: HttpRequest) -> HttpResponse:
    """GET: the signed-in person's open invitations, each with what joining means; POST `invitation` and
    `decision` (accept | decline)."""
    if request.method == "POST":
        return _respond(request)
    pending = list(invitations_for(request.user))
    return render(
        request, "owlat/invitations/list.html", {"invitations": pending, "title": "Your invitations"}
    )


def _respond(request: HttpRequest) -> HttpResponse:
    decision = request.POST.get("decision")
    invitation_id = request.POST.get("invitation", "")
    try:
        return _decide(request, decision, invitation_id)
    except (
        InvitationError,
        ValueError,
        ValidationError,
    ) as exc:  # ValueError / ValidationError: a malformed id
        messages.error(request, getattr(exc, "message", "This invitation is not open for your account."))
    finally:
        request.session[SESSION_WAITING] = invitations_for(request.user).count()
    return HttpResponseRedirect(reverse("owlat-invitations"))


def _decide(request: HttpRequest, decision: str | None, invitation_id: str) -> HttpResponse:
    from owlat.admin_tenancy.access import SESSION_KEY

    if decision == "accept":
        membership = invitation_accept(invitation_id=invitation_id, user=request.user)
        request.session[SESSION_KEY] = str(membership.organization_id)  # land in the organization joined
        messages.success(request, f"You joined {membership.organization.name} as {membership.role}.")
        return HttpResponseRedirect(reverse("admin:index"))
    if decision == "decline":
        invitation_decline(invitation_id=invitation_id, user=request.user)
        messages.info(request, "Invitation declined: nothing changed for your account.")
    else:
        messages.error(request, "Choose Accept or Decline.")
    return HttpResponseRedirect(reverse("owlat-invitations"))


@login_required(login_url=LOGIN_URL)
def invitation_link_view(request: HttpRequest, token: str) -> HttpResponse:
    """The email link: the same list (the invitation is there when it is open for this account)."""
    invitation = invitation_from_token(token)
    pending = {i.pk for i in invitations_for(request.user)}
    if invitation is None or invitation.pk not in pending:
        messages.error(request, "This link is not open for your account (answered, withdrawn or expired).")
    return HttpResponseRedirect(reverse("owlat-invitations"))
