from django.apps import AppConfig


class TemplatesConfig(AppConfig):
    name = "templates"
    default_auto_field = "django.db.models.BigAutoField"
