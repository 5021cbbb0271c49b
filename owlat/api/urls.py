"""`/api/v1` routes: the kernel's (health, schema, contacts, topics, segments) and each app's `api_urls.py`.

Every route is slash-optional (`api_route`, API-01).
"""

from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularRedocView, SpectacularSwaggerView

from owlat.api import views
from owlat.api.health import HealthView
from owlat.api.legacy import api_route

urlpatterns = [
    path("health", HealthView.as_view(), name="api-health"),
    path("schema", SpectacularJSONAPIView.as_view(), name="api-schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    # contacts (API-13…18)
    api_route(r"contacts", views.ContactListView, name="api-contacts"),
    api_route(r"contacts/(?P<id_or_email>.+?)", views.ContactDetailView, name="api-contact"),
    # topics: membership (API-19/20) and CRUD (API-25)
    api_route(r"topics", views.TopicListView, name="api-topics"),
    api_route(r"topics/(?P<topic_id>[^/]+)/contacts", views.TopicContactsView, name="api-topic-contacts"),
    api_route(
        r"topics/(?P<topic_id>[^/]+)/contacts/(?P<email_or_id>.+?)",
        views.TopicContactDeleteView,
        name="api-topic-contact",
    ),
    api_route(r"topics/(?P<topic_id>[^/]+)", views.TopicDetailView, name="api-topic"),
    # segments (API-25)
    api_route(r"segments", views.SegmentListView, name="api-segments"),
    api_route(
        r"segments/(?P<segment_id>[^/]+)/contacts", views.SegmentContactsView, name="api-segment-contacts"
    ),
    api_route(r"segments/(?P<segment_id>[^/]+)", views.SegmentDetailView, name="api-segment"),
    # the apps
    path("", include("delivery.api_urls")),
    path("", include("automations.api_urls")),
    path("", include("campaigns.api_urls")),
    path("", include("inbox.api_urls")),
]
