"""Public (non-API) URLs of the inbox app: the raw RFC 5322 endpoint for an MTA (AGT-02), its secret in the
Authorization header. django-anymail's inbound webhooks are served by `anymail.urls` under
`/webhooks/<esp>/inbound/` (delivery's URLs)."""

from django.urls import path

from inbox import views

urlpatterns = [
    path("inbound/raw", views.raw_inbound, name="inbox-raw-inbound"),
    path("inbound/raw/", views.raw_inbound),
    # the former form with the secret in the path: refused (410) with what to do instead
    path("inbound/raw/<str:token>", views.raw_inbound_legacy),
    path("inbound/raw/<str:token>/", views.raw_inbound_legacy),
]
