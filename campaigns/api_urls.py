"""`/api/v1` routes of the campaigns app."""

urlpatterns: list = []
