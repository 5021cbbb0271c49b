from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"
