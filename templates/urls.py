"""Public (non-API) URLs of the templates app."""

urlpatterns: list = []
