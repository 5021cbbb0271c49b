"""`/api/v1` routes of the delivery app."""

urlpatterns: list = []
