"""`/api/v1` routes of the delivery app (API-22, API-32)."""

from django.urls import path

from delivery.api import views

urlpatterns = [
    path("transactional", views.TransactionalSendView.as_view(), name="api-transactional"),
    path(
        "transactional/<id:send_id>",
        views.TransactionalStatusView.as_view(),
        name="api-transactional-status",
    ),
]
