"""`/api/v1` routes of the templates app (API-26)."""

from django.urls import path

from templates.api import views

urlpatterns = [
    path("templates", views.TemplateListView.as_view(), name="api-templates"),
    path(
        "templates/<id:template_id>/publish",
        views.TemplatePublishView.as_view(),
        name="api-template-publish",
    ),
    path(
        "templates/<id:template_id>/unpublish",
        views.TemplateUnpublishView.as_view(),
        name="api-template-unpublish",
    ),
    path("templates/<id:template_id>", views.TemplateDetailView.as_view(), name="api-template"),
]
