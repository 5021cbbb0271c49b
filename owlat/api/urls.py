"""`/api/v1` routes: the kernel's (health, schema, contacts, topics, segments) and each app's `api_urls.py`.

Every route is slash-optional (`api_route`, API-01).
"""

from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from owlat.api.base import api_route
from owlat.api.health import HealthView

urlpatterns = [
    api_route(r"health", HealthView, name="api-health"),
    api_route(r"schema", SpectacularJSONAPIView.as_view(), name="api-schema"),
    api_route(r"docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # the apps
    path("", include("delivery.api_urls")),
    path("", include("automations.api_urls")),
    path("", include("campaigns.api_urls")),
    path("", include("inbox.api_urls")),
]
