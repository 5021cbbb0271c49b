"""Public (non-API) URLs of the campaigns app."""

from django.urls import path

from campaigns import views

urlpatterns = [
    path("archive", views.archive_view, name="campaign-archive"),
]
