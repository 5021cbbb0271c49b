"""`/api/v1` routes of the automations app."""

urlpatterns: list = []
