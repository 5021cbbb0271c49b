from django.apps import AppConfig


class TemplatesConfig(AppConfig):
    name = "templates"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from templates.api import schema  # noqa: F401  (the block document's OpenAPI extension)
