"""Kept so `owlat/api/urls.py`'s include of `inbox.api_urls` keeps working; the routes live in `inbox.api.urls`."""

from inbox.api.urls import urlpatterns

__all__ = ["urlpatterns"]
