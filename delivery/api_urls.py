"""`/api/v1` routes of the delivery app (API-22, API-32) and of the templates app below it (API-26)."""

from django.urls import include, path

from delivery import api
from owlat.api.legacy import api_route

urlpatterns = [
    api_route(r"transactional", api.TransactionalSendView, name="api-transactional"),
    api_route(
        r"transactional/(?P<send_id>[^/]+)", api.TransactionalStatusView, name="api-transactional-status"
    ),
    path("", include("templates.api_urls")),
]
