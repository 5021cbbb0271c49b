"""The image library (templates.images): limits, re-encoding with Pillow, the email copy, serving from SITE_URL
with long cache headers, per organization, delete refused while in use."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from templates.images import ImageError, image_delete, image_payload, image_upload
from templates.models import EmailTemplate, TemplateImage
from testsupport.api import make_org


def png(width=1600, height=800, color=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def test_an_upload_is_re_encoded_with_an_email_copy_and_served_with_long_cache(client, org, media, settings):
    jpeg = io.BytesIO()
    Image.new("RGB", (2400, 1200), (10, 120, 200)).save(jpeg, "JPEG", exif=b"Exif\x00\x00secret")
    image = image_upload(organization_id=org.pk, upload=jpeg.getvalue() + b"trailing junk", name="Hero")
    assert (image.width, image.height, image.email_width, image.email_height) == (2400, 1200, 1200, 600)
    assert image.content_type == "image/jpeg"
    payload = image_payload(image)
    assert payload["width"] == 600 and payload["height"] == 300
    assert payload["url"].startswith(f"{settings.SITE_URL}/img/{image.pk}/email.jpg")
    response = client.get(payload["url"].removeprefix(settings.SITE_URL))
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Set-Cookie" not in response
    body = b"".join(response.streaming_content)
    assert b"secret" not in body and b"trailing junk" not in body
    assert Image.open(io.BytesIO(body)).size == (1200, 600)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "not an image that can be read"),
        (b"", "The file is empty"),
        (b"\x89PNG\r\n\x1a\n" + b"0" * 64, "not an image that can be read"),
    ],
)
def test_what_is_not_an_allowed_image_is_refused_saying_what_to_upload(org, media, data, message):
    with pytest.raises(ImageError, match=message):
        image_upload(organization_id=org.pk, upload=data)
    assert not TemplateImage.objects.exists()


def test_size_and_pixel_limits(org, media, settings):
    settings.IMAGE_UPLOAD_MAX_BYTES = 1000
    with pytest.raises(ImageError, match="larger than"):
        image_upload(organization_id=org.pk, upload=png())
    settings.IMAGE_UPLOAD_MAX_BYTES = 5 * 1024 * 1024
    settings.IMAGE_MAX_PIXELS = 1000
    with pytest.raises(ImageError, match="more than 1,000 pixels"):
        image_upload(organization_id=org.pk, upload=png())


def test_delete_is_refused_while_a_template_uses_the_image(org, media):
    image = image_upload(organization_id=org.pk, upload=png(), name="Logo")
    payload = image_payload(image)
    block = {"id": "i", "type": "image", "imageId": payload["id"], "src": payload["url"], "alt": "Logo"}
    template = EmailTemplate.objects.create(
        organization=org, name="News", subject="s", content={"version": 1, "blocks": [block]}
    )
    other_org = make_org(name="Other")
    EmailTemplate.objects.create(
        organization=other_org, name="Theirs", subject="s", html_content=payload["url"]
    )
    with pytest.raises(ImageError, match="used by 1 template"):
        image_delete(image=image, actor="t")
    template.delete()
    image_delete(image=image, actor="t")
    assert not TemplateImage.objects.exists()


def test_the_editor_library_lists_only_the_active_organizations_images(admin_client, org, media):
    mine = image_upload(organization_id=org.pk, upload=png(), name="Mine")
    image_upload(organization_id=make_org(name="Other").pk, upload=png(), name="Theirs")
    listed = admin_client.get("/admin/templates/templateimage/library/").json()["images"]
    assert [i["id"] for i in listed] == [str(mine.pk)]
    upload = io.BytesIO(png(300, 100))
    upload.name = "banner.png"
    r = admin_client.post("/admin/templates/templateimage/library/upload/", {"file": upload})
    assert (
        r.status_code == 201
        and r.json()["image"]["width"] == 300
        and r.json()["image"]["name"] == "banner.png"
    )
    bad = io.BytesIO(b"hello")
    bad.name = "x.png"
    r = admin_client.post("/admin/templates/templateimage/library/upload/", {"file": bad})
    assert r.status_code == 400 and r.json()["field"] == "file"
