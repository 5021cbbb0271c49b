"""Template back-office (DOM-13, D-12): edit, publish/unpublish through the template lifecycle, preview the
rendered HTML for a chosen contact and language, and send a test email (kind `test`, through delivery)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from owlat.admin_tenancy import TenantModelAdmin, get_tenancy
from owlat.models import Contact
from owlat.sandbox import sandboxed_response
from templates.admin_editor import BlockContentFormMixin, editor_preview_response
from templates.admin_forms import (
    HTML,
    SUBJECT,
    TemplateLanguagesForm,
    form_with_languages,
    language_name,
    pretty_json,
    requested_languages,
    translation_field,
)
from templates.blocks import is_block_document
from templates.lifecycle import email_template_set_status, transactional_email_set_status
from templates.models import EmailTemplate, TransactionalEmail
from templates.rendering import resolve_language


def _languages(template: Any) -> list[str]:
    langs = [template.default_language or "en"]
    for lang in [*(template.supported_languages or []), *(template.html_translations or {}).keys()]:
        if lang and lang not in langs:
            langs.append(lang)
    return langs


class TestSendForm(forms.Form):
    to = forms.EmailField(label="Send to")
    contact = forms.ModelChoiceField(
        queryset=Contact.objects.none(), required=False, help_text="Personalize as"
    )
    language = forms.ChoiceField(choices=(), required=False)

    def __init__(self, *args: Any, organization_id: Any, languages: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["contact"].queryset = Contact.objects.filter(
            organization_id=organization_id, deleted_at__isnull=True
        ).order_by("email")
        self.fields["language"].choices = [(lang, lang) for lang in languages]


class TemplateAdminMixin:
    """Preview and send-test views shared by both template kinds."""

    manage_permission = "templates:manage"
    # not `admin/templates/change_form.html`: Django would use that name for every admin of this app
    change_form_template = "admin/templates/template_change_form.html"
    form = TemplateLanguagesForm
    readonly_fields = ("status", "created_at", "updated_at", "html_translations_json")
    actions = ("publish", "unpublish")
    kind: str = ""
    main_fields: tuple[str, ...] = ()
    json_fields: tuple[str, ...] = ("html_translations_json",)

    def content_fieldsets(self, request: HttpRequest, obj: Any) -> list[tuple[str | None, dict[str, Any]]]:
        """The fields of the content itself (the block editor's for email templates)."""
        return [(None, {"fields": self.main_fields})]

    def uses_blocks(self, obj: Any) -> bool:
        return False

    def get_fieldsets(self, request: HttpRequest, obj: Any = None):
        languages = requested_languages(request.POST if request.method == "POST" else None, obj)
        fieldsets: list[tuple[str | None, dict[str, Any]]] = [
            *self.content_fieldsets(request, obj),
            ("Languages", {"fields": ("default_language", "supported_languages")}),
        ]
        blocks = self.uses_blocks(obj)
        for lang in languages:
            fields = (translation_field(lang, SUBJECT),) if blocks else None
            fieldsets.append(
                (
                    f"Translation: {language_name(lang)} ({lang})",
                    {"fields": fields or (translation_field(lang, SUBJECT), translation_field(lang, HTML))},
                )
            )
        if obj is not None:
            fieldsets.append(
                (
                    "Stored JSON (read-only)",
                    {"fields": self.json_fields, "classes": ("collapse",)},
                )
            )
            fieldsets.append((None, {"fields": ("created_at", "updated_at")}))
        return fieldsets

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        languages = requested_languages(request.POST if request.method == "POST" else None, obj)
        kwargs["form"] = form_with_languages(self.form, languages)
        return super().get_form(request, obj, change=change, **kwargs)

    @admin.display(description="Translations (as stored)")
    def html_translations_json(self, obj: Any) -> str:
        return pretty_json(obj.html_translations if obj else None)

    @admin.display(description="Editor text overrides (translations)")
    def translations_json(self, obj: Any) -> str:
        return pretty_json(obj.translations if obj else None)

    @admin.display(description="Editor document (content)")
    def content_json(self, obj: Any) -> str:
        return pretty_json(getattr(obj, "content", None) if obj else None)

    def get_urls(self):
        info = self.model._meta.app_label, self.model._meta.model_name
        return [
            path(
                "<path:object_id>/preview/",
                self.admin_site.admin_view(self.preview_view),
                name="{}_{}_preview".format(*info),
            ),
            path(
                "<path:object_id>/preview/frame/",
                self.admin_site.admin_view(self.preview_frame_view),
                name="{}_{}_preview_frame".format(*info),
            ),
            path(
                "<path:object_id>/set-status/",
                self.admin_site.admin_view(self.set_status_view),
                name="{}_{}_set_status".format(*info),
            ),
            path(
                "<path:object_id>/send-test/",
                self.admin_site.admin_view(self.send_test_view),
                name="{}_{}_send_test".format(*info),
            ),
            *super().get_urls(),
        ]

    def _object(self, request: HttpRequest, object_id: str) -> Any:
        obj = self.get_object(request, object_id)
        if obj is None or not self.has_view_permission(request, obj):
            raise Http404("Template not found")
        return obj

    def _preview_inputs(self, request: HttpRequest, obj: Any) -> tuple[Any, Any, str]:
        contacts = Contact.objects.filter(
            organization_id=obj.organization_id, deleted_at__isnull=True
        ).order_by("email")
        contact = None
        contact_id = request.GET.get("contact")
        if contact_id is None:
            # A real contact by default: the sample data is one choice away.
            contact = contacts.exclude(email__isnull=True).first()
        elif contact_id:
            try:
                contact = contacts.filter(pk=contact_id).first()
            except (ValueError, forms.ValidationError):
                contact = None
        language = (
            request.GET.get("language") or (contact.language if contact else None) or obj.default_language
        )
        return contacts, contact, language

    def preview_view(self, request: HttpRequest, object_id: str):
        """The real message for a contact (or sample data) and language: subject, sender, preheader, footer with
        working links, desktop and mobile widths side by side, dark mode, plain text and warnings."""
        from templates.preview import template_preview

        obj = self._object(request, object_id)
        contacts, contact, language = self._preview_inputs(request, obj)
        preview = template_preview(obj, contact=contact, language=language)
        info = self.model._meta.app_label, self.model._meta.model_name
        frame = reverse("admin:{}_{}_preview_frame".format(*info), args=[obj.pk])
        dark = request.GET.get("dark") == "1"
        context = {
            **self.admin_site.each_context(request),
            "title": f"Preview: {obj}",
            "opts": self.model._meta,
            "original": obj,
            "preview": preview,
            "rendered": preview.rendered,
            "requested_language": language,
            "resolved_language": resolve_language(obj, language),
            "languages": _languages(obj),
            "contacts": contacts[:200],
            "contact": contact,
            "dark": dark,
            # the frame reads the same query, so it shows the same contact, language and mode
            "frame_url": f"{frame}?{request.GET.urlencode()}" if request.GET else frame,
        }
        return TemplateResponse(request, "admin/templates/preview.html", context)

    def preview_frame_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The previewed message itself, as a sandboxed document (owlat.sandbox) the preview page frames."""
        from templates.preview import dark_mode, template_preview

        obj = self._object(request, object_id)
        _contacts, contact, language = self._preview_inputs(request, obj)
        markup = template_preview(obj, contact=contact, language=language).html
        return sandboxed_response(dark_mode(markup) if request.GET.get("dark") == "1" else markup)

    def send_test_view(self, request: HttpRequest, object_id: str):
        obj = self._object(request, object_id)
        if not get_tenancy(request).allows("emails:test"):
            raise PermissionDenied
        form = TestSendForm(
            request.POST or None,
            organization_id=obj.organization_id,
            languages=_languages(obj),
            initial={"to": getattr(request.user, "email", "")},
        )
        if request.method == "POST" and form.is_valid():
            from templates.services import template_test_send

            contact = form.cleaned_data.get("contact")
            try:
                send = template_test_send(
                    organization_id=obj.organization_id,
                    to=form.cleaned_data["to"],
                    email_template_id=obj.pk if self.kind == "email" else None,
                    transactional_email_id=obj.pk if self.kind == "transactional" else None,
                    contact_id=contact.pk if contact else None,
                    language=form.cleaned_data.get("language") or None,
                )
            except ValueError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"Test email queued to {send.email}.", messages.SUCCESS)
                info = self.model._meta.app_label, self.model._meta.model_name
                return HttpResponseRedirect(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Send a test email: {obj}",
            "opts": self.model._meta,
            "original": obj,
            "form": form,
        }
        return TemplateResponse(request, "admin/templates/send_test.html", context)

    def _set_status(self, request: HttpRequest, queryset: Any, to: str) -> None:
        setter = email_template_set_status if self.kind == "email" else transactional_email_set_status
        key = "template_id" if self.kind == "email" else "transactional_email_id"
        done, refused = 0, []
        for obj in queryset:
            outcome = setter(
                **{key: obj.pk}, to=to, actor=self.actor(request), organization_id=obj.organization_id
            )
            if outcome.ok and outcome.applied == "transitioned":
                done += 1
            elif not outcome.ok:
                refused.append(f"{obj}: {outcome.message}")
        self.message_user(request, f"{done} template(s) now {to}.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    def set_status_view(self, request: HttpRequest, object_id: str):
        """The Publish / Unpublish buttons of the change page (POST `to`), through the template lifecycle."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = self._object(request, object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        to = request.POST.get("to", "")
        if to not in ("published", "draft"):
            self.message_user(request, "Choose “published” or “draft”.", messages.ERROR)
        else:
            self._set_status(request, self.model._default_manager.filter(pk=obj.pk), to)
        info = self.model._meta.app_label, self.model._meta.model_name
        return HttpResponseRedirect(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))

    @admin.action(description="Publish selected templates", permissions=["change"])
    def publish(self, request: HttpRequest, queryset: Any) -> None:
        self._set_status(request, queryset, "published")

    @admin.action(description="Unpublish selected templates (back to draft)", permissions=["change"])
    def unpublish(self, request: HttpRequest, queryset: Any) -> None:
        self._set_status(request, queryset, "draft")


class EmailTemplateForm(BlockContentFormMixin, TemplateLanguagesForm):
    pass


@admin.register(EmailTemplate)
class EmailTemplateAdmin(TemplateAdminMixin, TenantModelAdmin):
    """Block templates are edited in the block editor (templates.admin_editor); HTML templates as HTML, with a
    switch that converts them to blocks. A new template starts from a starter layout, or from raw HTML."""

    kind = "email"
    form = EmailTemplateForm
    list_display = ("name", "subject", "type", "status", "default_language", "updated_at")
    list_filter = ("status", "type")
    search_fields = ("name", "subject")
    readonly_fields = (*TemplateAdminMixin.readonly_fields, "content_json", "translations_json")
    main_fields = ("name", "type", "status", "subject", "preview_text", "html_content", "plain_text_content")
    json_fields = ("content_json", "translations_json", "html_translations_json")
    head_fields = ("name", "type", "status", "subject", "preview_text")

    def uses_blocks(self, obj: Any) -> bool:
        return obj is None or is_block_document(obj.content)

    def content_fieldsets(self, request: HttpRequest, obj: Any) -> list[tuple[str | None, dict[str, Any]]]:
        head = tuple(f for f in self.head_fields if obj is not None or f != "status")
        if obj is None:
            return [
                (None, {"fields": head}),
                (
                    "Content",
                    {"fields": ("content", "block_translations"), "classes": ("owlat-editor-fieldset",)},
                ),
                (
                    "Or write raw HTML instead (power users)",
                    {"fields": ("html_content", "plain_text_content"), "classes": ("collapse",)},
                ),
            ]
        if is_block_document(obj.content):
            return [
                (None, {"fields": head}),
                (
                    "Content",
                    {"fields": ("content", "block_translations"), "classes": ("owlat-editor-fieldset",)},
                ),
                ("Plain text", {"fields": ("plain_text_content",), "classes": ("collapse",)}),
            ]
        return [(None, {"fields": (*head, "html_content", "plain_text_content", "convert_to_blocks")})]

    def get_urls(self):
        return [
            path(
                "editor-preview/",
                self.admin_site.admin_view(self.editor_preview_view),
                name="templates_emailtemplate_editor_preview",
            ),
            *super().get_urls(),
        ]

    def editor_preview_view(self, request: HttpRequest):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            raise PermissionDenied
        return editor_preview_response(request)


@admin.register(TransactionalEmail)
class TransactionalEmailAdmin(TemplateAdminMixin, TenantModelAdmin):
    kind = "transactional"
    feature_flag = "transactional"
    list_display = ("slug", "name", "subject", "status", "default_language", "updated_at")
    list_filter = ("status",)
    search_fields = ("slug", "name", "subject")
    readonly_fields = (*TemplateAdminMixin.readonly_fields, "translations_json")
    main_fields = ("slug", "name", "status", "subject", "html_content", "plain_text_content")
    json_fields = ("translations_json", "html_translations_json")


from templates import admin_images  # noqa: E402, F401  (the image library's admin)
