"""`/api/v1` routes: the kernel's (health, schema, docs, contacts, topics, segments) and each app's `api/urls.py`.

Routes are plain `path()`s without a trailing slash; `ApiMiddleware` answers the slash variant too (API-01).
"""

from csp.decorators import csp_update
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.negotiation import DefaultContentNegotiation

from owlat.api import segment_views, signup_views, views
from owlat.api.health import HealthView


class ContactRefConverter:
    """A contact id or (percent-decoded) email address: may contain `/`, never ends with one."""

    regex = r".*[^/]"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class ResourceIdConverter:
    """A resource id (API-09): any segment, so that the view answers a malformed one with 400 "Invalid <resource>
    ID format" rather than the resolver's 404; documented as a UUID (`PATH_CONVERTER_OVERRIDES`)."""

    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ContactRefConverter, "contact")
register_converter(ResourceIdConverter, "id")

# the docs pages are HTML (and Swagger's script JavaScript): DRF's negotiation, not the API's JSON-only one
_HTML = DefaultContentNegotiation

urlpatterns = [
    # the events intake first (the most frequent call resolves past 4 patterns instead of ~25; every
    # app's routes are disjoint from the kernel's, so the order decides nothing else)
    path("", include("automations.api.urls")),
    path("health", HealthView.as_view(), name="api-health"),
    path("schema", SpectacularJSONAPIView.as_view(), name="api-schema"),
    # the split view serves its script from a URL of its own: no inline script (Content-Security-Policy)
    path(
        "docs",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", content_negotiation_class=_HTML),
        name="api-docs",
    ),
    path(
        "redoc",
        # Redoc builds its search index in a blob: worker and shows its maker's logo from their CDN
        csp_update({"worker-src": ["blob:"], "img-src": ["https://cdn.redoc.ly"]})(
            SpectacularRedocView.as_view(url_name="api-schema", content_negotiation_class=_HTML)
        ),
        name="api-redoc",
    ),
    # contacts (API-13…18)
    path("contacts", views.ContactListView.as_view(), name="api-contacts"),
    path("contacts/<contact:id_or_email>", views.ContactDetailView.as_view(), name="api-contact"),
    # topics: membership (API-19/20) and CRUD (API-25)
    path("topics", views.TopicListView.as_view(), name="api-topics"),
    path("topics/<id:topic_id>/contacts", views.TopicContactsView.as_view(), name="api-topic-contacts"),
    path(
        "topics/<id:topic_id>/contacts/<contact:email_or_id>",
        views.TopicContactDeleteView.as_view(),
        name="api-topic-contact",
    ),
    path("topics/<id:topic_id>", views.TopicDetailView.as_view(), name="api-topic"),
    # sign-up forms (built in the admin; listed and read here)
    path("forms", signup_views.SignupFormListView.as_view(), name="api-forms"),
    path("forms/<id:form_id>", signup_views.SignupFormDetailView.as_view(), name="api-form"),
    # segments (API-25)
    path("segments", segment_views.SegmentListView.as_view(), name="api-segments"),
    path(
        "segments/<id:segment_id>/contacts",
        segment_views.SegmentContactsView.as_view(),
        name="api-segment-contacts",
    ),
    path("segments/<id:segment_id>", segment_views.SegmentDetailView.as_view(), name="api-segment"),
    # the apps
    path("", include("delivery.api.urls")),
    path("", include("templates.api.urls")),
    path("", include("campaigns.api.urls")),
    path("", include("inbox.api.urls")),
]
