"""Public (non-API) URLs of the automations app."""

urlpatterns: list = []
