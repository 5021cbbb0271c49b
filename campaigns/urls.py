"""Public (non-API) URLs of the campaigns app."""

urlpatterns: list = []
