"""Public URLs of sign-up forms (mounted at the site root)."""

from django.urls import path

from owlat.signup import views

urlpatterns = [
    path("forms/confirm/<str:token>/", views.confirm_page, name="signup-confirm"),
    path("forms/<uuid:form_id>/", views.hosted_page, name="signup-page"),
    path("forms/<uuid:form_id>/subscribe.json", views.subscribe_json, name="signup-subscribe-json"),
    path("forms/<uuid:form_id>/timestamp.json", views.timestamp_json, name="signup-timestamp"),
]
