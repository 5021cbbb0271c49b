"""Root URLs: the admin back-office, the public API under /api/v1, public pages and provider webhooks."""

from django.contrib import admin
from django.urls import include, path

from owlat import invitation_views
from owlat.favicon import favicon
from owlat.not_found import root_redirect

urlpatterns = [
    path("", root_redirect, name="root"),  # "/" and "View site" lead to the admin
    path("favicon.ico", favicon, name="favicon"),  # asked for by every browser page
    path("admin/", admin.site.urls),
    path("api/v1/", include("owlat.api.urls")),
    # membership by invitation (owlat.invitations): outside the admin, for invitees without access yet
    path(
        "invitations/login/", invitation_views.InvitationLoginView.as_view(), name="owlat-invitations-login"
    ),
    path("invitations/", invitation_views.invitations_view, name="owlat-invitations"),
    path("invitations/<str:token>/", invitation_views.invitation_link_view, name="owlat-invitation-link"),
    path("", include("owlat.signup.urls")),  # sign-up forms: hosted page, embedded posts, confirmation
    path("", include("delivery.urls")),
    path("", include("templates.urls")),
    path("", include("automations.urls")),
    path("", include("campaigns.urls")),
    path("", include("inbox.urls")),
]
