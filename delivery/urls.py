"""Public (non-API) URLs of the delivery app: tracking, unsubscribe, preference centre, double opt-in, and the
provider webhooks (django-anymail's tracking endpoints under `/webhooks/<esp>/tracking/`, D-09; only the
providers Owlat supports are mounted, see `delivery.webhooks.PROVIDER_WEBHOOKS`) and their inbound endpoints
under `/webhooks/<esp>/inbound/` (`delivery.inbound_webhooks`, for the inbox)."""

from django.urls import path

from delivery import views
from delivery.inbound_webhooks import INBOUND_WEBHOOKS
from delivery.webhooks import PROVIDER_WEBHOOKS, provider_webhook_view

urlpatterns = [
    path("t/o/<str:token>", views.open_pixel, name="delivery-open"),
    path(
        "t/c/<str:organization_id>/<str:send_id>/<str:encoded>/<str:signature>",
        views.click_redirect,
        name="delivery-click",
    ),
    path("unsub/verify/<str:token>", views.unsubscribe_verify, name="delivery-unsubscribe-verify"),
    path("unsub/<str:token>", views.unsubscribe, name="delivery-unsubscribe"),
    path("preferences/<str:token>", views.preferences, name="delivery-preferences"),
    path("doi/confirm/<str:token>", views.doi_confirm_page, name="delivery-doi-confirm"),
    *(
        path(
            f"webhooks/{hook.slug}/tracking/",
            provider_webhook_view(hook),
            name=f"{hook.slug}-tracking-webhook",
        )
        for hook in PROVIDER_WEBHOOKS
    ),
    *(  # inbound mail through an ESP, to the inbox (delivery.inbound_webhooks)
        path(
            f"webhooks/{hook.slug}/inbound/",
            provider_webhook_view(hook),
            name=f"{hook.slug}-inbound-webhook",
        )
        for hook in INBOUND_WEBHOOKS
    ),
    *(  # Mandrill's combined endpoint, as anymail mounts it
        path("webhooks/mandrill/", provider_webhook_view(hook), name="mandrill-webhook")
        for hook in PROVIDER_WEBHOOKS
        if hook.slug == "mandrill"
    ),
]
