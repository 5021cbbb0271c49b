"""Public (non-API) URLs of the delivery app."""

urlpatterns: list = []
