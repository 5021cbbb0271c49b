from django.apps import AppConfig


class OwlatConfig(AppConfig):
    name = "owlat"
    verbose_name = "Owlat"
    default_auto_field = "django.db.models.BigAutoField"
