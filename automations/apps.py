from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    name = "automations"
    default_auto_field = "django.db.models.BigAutoField"
