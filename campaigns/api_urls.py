"""Old import path kept while `owlat/api/urls.py` still includes it; the routes live in `campaigns.api.urls`."""

from campaigns.api.urls import urlpatterns

__all__ = ["urlpatterns"]
