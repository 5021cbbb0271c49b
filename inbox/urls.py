"""Public (non-API) URLs of the inbox app."""

urlpatterns: list = []
