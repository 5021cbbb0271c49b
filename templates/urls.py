"""Public (non-API) URLs of the templates app: library images, as mail links them from SITE_URL."""

from django.urls import path

from templates import views

urlpatterns = [
    path("img/<uuid:image_id>/<str:variant>.<str:extension>", views.image_view, name="template-image"),
]
