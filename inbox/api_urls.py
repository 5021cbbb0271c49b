"""`/api/v1` routes of the inbox app."""

urlpatterns: list = []
