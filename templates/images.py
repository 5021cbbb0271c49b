"""The template image library: upload, in-use check and delete, per organization.

An upload is refused unless it is a JPEG, PNG, GIF or WebP within `IMAGE_UPLOAD_MAX_BYTES` and
`IMAGE_MAX_PIXELS`; it is decoded with Pillow (turned upright from its EXIF orientation) and written again, so
no metadata or trailing bytes of the original reach a mailbox: JPEG as JPEG, PNG, GIF (first frame) and WebP
as PNG (WebP is not shown by every mail client). A copy at most `EMAIL_MAX_WIDTH` pixels wide (twice the
600 px email width, for sharp high-density screens) is what mail links; both go through Django's storage API
(`STORAGES["default"]`) and are served from SITE_URL by `templates.views.image_view`.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.urls import reverse
from PIL import Image, ImageOps, UnidentifiedImageError

from owlat.audit import audit_write
from templates.blocks import is_block_document, iter_blocks
from templates.models import EmailTemplate, TemplateImage

ALLOWED_FORMATS = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "WEBP": "image/webp"}
EMAIL_MAX_WIDTH = 1200
EMAIL_DISPLAY_WIDTH = 600


class ImageError(ValueError):
    """An upload or delete refused; `message` says what to do."""

    def __init__(self, message: str, *, field: str = "file") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Encoded:
    data: bytes
    content_type: str
    extension: str
    width: int
    height: int


def _decode(data: bytes) -> Image.Image:
    limit = settings.IMAGE_UPLOAD_MAX_BYTES
    if len(data) > limit:
        raise ImageError(
            f"The image is larger than {limit // (1024 * 1024)} MB: make it smaller and upload again."
        )
    if not data:
        raise ImageError("The file is empty: choose an image.")
    try:
        probe = Image.open(io.BytesIO(data))
        fmt = probe.format
        if fmt not in ALLOWED_FORMATS:
            raise ImageError("Upload a JPEG, PNG, GIF or WebP image.")
        if probe.width * probe.height > settings.IMAGE_MAX_PIXELS:
            raise ImageError(
                f"The image has more than {settings.IMAGE_MAX_PIXELS:,} pixels: scale it down and upload again."
            )
        probe.verify()
        image = Image.open(io.BytesIO(data))
        image.load()
    except ImageError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        raise ImageError(
            "The file is not an image that can be read: upload a JPEG, PNG, GIF or WebP."
        ) from None
    image.format_name = fmt  # type: ignore[attr-defined]
    return image


def _encode(image: Image.Image, fmt: str, max_width: int | None = None) -> Encoded:
    if max_width and image.width > max_width:
        height = max(1, round(image.height * max_width / image.width))
        image = image.resize((max_width, height), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if fmt == "JPEG":
        image.convert("RGB").save(out, "JPEG", quality=85, optimize=True, progressive=True)
        return Encoded(out.getvalue(), "image/jpeg", "jpg", image.width, image.height)
    if image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        image = image.convert("RGBA")
    image.save(out, "PNG", optimize=True)
    return Encoded(out.getvalue(), "image/png", "png", image.width, image.height)


def image_upload(*, organization_id: Any, upload: Any, name: str = "", actor: str = "") -> TemplateImage:
    """Decode, re-encode and store an uploaded file (a Django `UploadedFile` or bytes) in the library."""
    data = upload if isinstance(upload, bytes) else _read_limited(upload)
    image = _decode(data)
    fmt = "JPEG" if image.format_name == "JPEG" else "PNG"  # type: ignore[attr-defined]
    if getattr(image, "n_frames", 1) > 1:
        image.seek(0)
    image = ImageOps.exif_transpose(image)
    full = _encode(image, fmt)
    email = _encode(image, fmt, EMAIL_MAX_WIDTH)
    base = uuid.uuid4().hex
    label = (name or getattr(upload, "name", "") or "image").strip()[:200]
    with transaction.atomic():
        record = TemplateImage(
            organization_id=organization_id,
            name=label,
            content_type=full.content_type,
            width=full.width,
            height=full.height,
            email_width=email.width,
            email_height=email.height,
            size_bytes=len(full.data),
            email_size_bytes=len(email.data),
            created_by=actor[:200],
        )
        record.file.save(f"{base}.{full.extension}", ContentFile(full.data), save=False)
        record.email_file.save(f"{base}-email.{email.extension}", ContentFile(email.data), save=False)
        record.save(force_insert=True)
        audit_write(
            organization_id=organization_id,
            actor=actor or "system:images",
            action="template_image.uploaded",
            resource="template_image",
            resource_id=str(record.pk),
            details={"name": label, "bytes": len(full.data)},
        )
    return record


def _read_limited(upload: Any) -> bytes:
    limit = settings.IMAGE_UPLOAD_MAX_BYTES
    if getattr(upload, "size", 0) and upload.size > limit:
        raise ImageError(
            f"The image is larger than {limit // (1024 * 1024)} MB: make it smaller and upload again."
        )
    return upload.read(limit + 1)


def image_url(image: TemplateImage, *, variant: str = "email") -> str:
    """The image's public address on SITE_URL (what mail and the editor link)."""
    name = image.email_file.name if variant == "email" else image.file.name
    extension = name.rsplit(".", 1)[-1]
    path = reverse("template-image", args=[image.pk, variant, extension])
    return f"{settings.SITE_URL}{path}"


def image_display_size(image: TemplateImage) -> tuple[int, int]:
    """Width and height the image is shown at in a 600 px email (its email copy halved when high-density)."""
    width = min(image.email_width, EMAIL_DISPLAY_WIDTH)
    return width, max(1, round(image.email_height * width / image.email_width))


def image_payload(image: TemplateImage) -> dict[str, Any]:
    """The editor's view of a library image (JSON)."""
    width, height = image_display_size(image)
    return {
        "id": str(image.pk),
        "name": image.name,
        "url": image_url(image),
        "width": width,
        "height": height,
        "bytes": image.email_size_bytes,
    }


def image_in_use(image: TemplateImage) -> list[EmailTemplate]:
    """The organization's templates whose blocks or HTML use the image."""
    path = f"/img/{image.pk}/"
    image_id = str(image.pk)

    def uses(template: EmailTemplate) -> bool:
        content = template.content
        if is_block_document(content) and any(
            isinstance(block, dict) and block.get("imageId") == image_id
            for block in iter_blocks(content["blocks"])
        ):
            return True
        return path in (template.html_content or "") or path in str(template.html_translations or "")

    templates = EmailTemplate.objects.filter(organization_id=image.organization_id).only(
        "id", "name", "content", "html_content", "html_translations"
    )
    return [template for template in templates if uses(template)]


def image_delete(*, image: TemplateImage, actor: str) -> None:
    """Delete the image and its files, refused while a template uses it."""
    users = image_in_use(image)
    if users:
        names = ", ".join(f"“{t.name}”" for t in users[:5]) + (" …" if len(users) > 5 else "")
        raise ImageError(
            f"The image is used by {len(users)} template(s): {names}. Remove it from them first.",
            field="image",
        )
    with transaction.atomic():
        image_id = str(image.pk)
        files = [image.file.name, image.email_file.name]
        storage = image.file.storage
        image.delete()
        audit_write(
            organization_id=image.organization_id,
            actor=actor,
            action="template_image.deleted",
            resource="template_image",
            resource_id=image_id,
            details={"name": image.name},
        )
        transaction.on_commit(lambda: [storage.delete(name) for name in files if name])
