"""Library images served from SITE_URL (templates.images): any storage backend, read through Django's storage
API, with a year-long immutable cache (a new upload is a new address). No cookie is read or set."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404, HttpRequest
from django.views.decorators.http import require_safe

from templates.models import TemplateImage

CACHE_CONTROL = "public, max-age=31536000, immutable"


@require_safe
def image_view(request: HttpRequest, image_id: Any, variant: str, extension: str) -> FileResponse:
    if variant not in ("email", "original"):
        raise Http404("No such image")
    image = TemplateImage.objects.filter(pk=image_id).only("file", "email_file", "content_type").first()
    if image is None:
        raise Http404("No such image")
    field = image.email_file if variant == "email" else image.file
    if not field.name or not field.name.endswith(f".{extension}"):
        raise Http404("No such image")
    try:
        handle = field.storage.open(field.name, "rb")
    except (FileNotFoundError, OSError):
        raise Http404("No such image") from None
    response = FileResponse(handle, content_type="image/jpeg" if extension == "jpg" else "image/png")
    response["Cache-Control"] = CACHE_CONTROL
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
