"""`/api/v1` routes. Each app contributes its own `api_urls.py`."""

from django.urls import include, path

urlpatterns = [
    path("", include("delivery.api_urls")),
    path("", include("automations.api_urls")),
    path("", include("campaigns.api_urls")),
    path("", include("inbox.api_urls")),
]
