"""`/api/v1` routes of the templates app (API-26); included from `delivery/api_urls.py`."""

from owlat.api.legacy import api_route
from templates import api

urlpatterns = [
    api_route(r"templates", api.TemplateListView, name="api-templates"),
    api_route(
        r"templates/(?P<template_id>[^/]+)/publish", api.TemplatePublishView, name="api-template-publish"
    ),
    api_route(
        r"templates/(?P<template_id>[^/]+)/unpublish",
        api.TemplateUnpublishView,
        name="api-template-unpublish",
    ),
    api_route(r"templates/(?P<template_id>[^/]+)", api.TemplateDetailView, name="api-template"),
]
