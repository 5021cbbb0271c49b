"""`/api/v1` routes of the templates app."""

urlpatterns: list = []
