"""The image library in the admin (templates.images): upload with a file picker, thumbnails, delete refused while a
template uses the image; and the JSON the block editor reads and uploads through (`library/`, `library/upload/`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils.html import format_html

from owlat.admin_tenancy import TenantModelAdmin, get_tenancy
from templates.images import ImageError, image_delete, image_in_use, image_payload, image_upload, image_url
from templates.models import TemplateImage

ACCEPT = "image/jpeg,image/png,image/gif,image/webp"


class ImageUploadForm(forms.ModelForm):
    upload = forms.FileField(
        label="Image",
        widget=forms.ClearableFileInput(attrs={"accept": ACCEPT}),
        help_text="JPEG, PNG, GIF or WebP, up to 5 MB. It is re-encoded and a copy sized for email is made.",
    )

    class Meta:
        model = TemplateImage
        fields = ("name",)
        help_texts = {"name": "How the image is listed in the editor's picker (empty: the file name)."}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].required = False


@admin.register(TemplateImage)
class TemplateImageAdmin(TenantModelAdmin):
    manage_permission = "templates:manage"
    list_display = ("thumbnail", "name", "dimensions", "created_at")
    search_fields = ("name",)
    readonly_fields = ("thumbnail_large", "dimensions", "address", "created_at")

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        if obj is None:
            kwargs["form"] = ImageUploadForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ["organization", "name", "upload"]
        return ["organization", "name", "thumbnail_large", "dimensions", "address", "created_at"]

    def save_model(self, request: HttpRequest, obj: TemplateImage, form: Any, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        try:
            created = image_upload(
                organization_id=obj.organization_id,
                upload=form.cleaned_data["upload"],
                name=form.cleaned_data.get("name") or "",
                actor=self.actor(request),
            )
        except ImageError as exc:
            raise _FormRefused(exc.message) from None
        obj.__dict__.update({k: v for k, v in created.__dict__.items() if k != "_state"})
        obj._state.adding = False

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None):
        try:
            return super().add_view(request, form_url, extra_context)
        except _FormRefused as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.path)

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None):
        obj = self.get_object(request, object_id)
        if obj is not None and self.has_delete_permission(request, obj):
            users = image_in_use(obj)
            if users:
                names = ", ".join(f"“{t.name}”" for t in users[:5])
                self.message_user(
                    request,
                    f"“{obj.name}” is used by {len(users)} template(s): {names}. Remove it from them, then delete it.",
                    messages.ERROR,
                )
                return HttpResponseRedirect(reverse("admin:templates_templateimage_change", args=[obj.pk]))
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request: HttpRequest, obj: TemplateImage) -> None:
        image_delete(image=obj, actor=self.actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for obj in queryset:
            try:
                image_delete(image=obj, actor=self.actor(request))
            except ImageError as exc:
                self.message_user(request, f"{obj.name}: {exc.message}", messages.ERROR)

    @admin.display(description="")
    def thumbnail(self, obj: TemplateImage) -> str:
        return format_html(
            '<img src="{}" alt="" style="height:40px;width:auto;border-radius:4px">', image_url(obj)
        )

    @admin.display(description="Preview")
    def thumbnail_large(self, obj: TemplateImage) -> str:
        return format_html('<img src="{}" alt="" style="max-width:360px;height:auto">', image_url(obj))

    @admin.display(description="Size")
    def dimensions(self, obj: TemplateImage) -> str:
        return f"{obj.width}×{obj.height} px (email copy {obj.email_width}×{obj.email_height}, {obj.email_size_bytes // 1024} KB)"

    @admin.display(description="Address in mail")
    def address(self, obj: TemplateImage) -> str:
        return image_url(obj)

    # --- the editor's JSON ---------------------------------------------------------------------------

    def get_urls(self):
        return [
            path(
                "library/",
                self.admin_site.admin_view(self.library_view),
                name="templates_templateimage_library",
            ),
            path(
                "library/upload/",
                self.admin_site.admin_view(self.library_upload_view),
                name="templates_templateimage_library_upload",
            ),
            *super().get_urls(),
        ]

    def _organization_id(self, request: HttpRequest) -> Any:
        organization_id = get_tenancy(request).organization_id
        if organization_id is None:
            raise PermissionDenied("Choose an organization with the switch first")
        return organization_id

    def library_view(self, request: HttpRequest) -> JsonResponse:
        """The active organization's images, newest first (`?q=` filters by name)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        queryset = TemplateImage.objects.filter(organization_id=self._organization_id(request))
        if request.GET.get("q"):
            queryset = queryset.filter(name__icontains=request.GET["q"][:100])
        return JsonResponse({"images": [image_payload(image) for image in queryset[:200]]})

    def library_upload_view(self, request: HttpRequest) -> JsonResponse:
        """POST `file` (and `name`): the uploaded image as the picker shows it, or 400 naming the field."""
        if request.method != "POST":
            return JsonResponse({"error": "POST an image as `file`", "field": "file"}, status=405)
        if not self.has_add_permission(request):
            raise PermissionDenied
        upload = request.FILES.get("file")
        if upload is None:
            return JsonResponse({"error": "Choose an image to upload.", "field": "file"}, status=400)
        try:
            image = image_upload(
                organization_id=self._organization_id(request),
                upload=upload,
                name=request.POST.get("name", ""),
                actor=self.actor(request),
            )
        except ImageError as exc:
            return JsonResponse({"error": exc.message, "field": exc.field}, status=400)
        return JsonResponse({"image": image_payload(image)}, status=201)


class _FormRefused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
