"""The attachments of an inbound message on its admin page: listed with their verdict, downloaded by the
organization's operators only (the message is looked up in the admin's tenant-filtered queryset, the attachment
within that message and organization), a quarantined one only after a warning page and an explicit POST."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from inbox.attachments import attachment_response
from inbox.models import InboundAttachment, InboundMessage


class AttachmentsAdminMixin:
    """For `InboundMessageAdmin`: the `attachments_view` field and the download URL."""

    def attachment_urls(self) -> list:
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/attachments/<uuid:attachment_id>/",
                self.admin_site.admin_view(self.attachment_view),
                name="{}_{}_attachment".format(*info),
            )
        ]

    @admin.display(description="attachments")
    def attachments_view(self, obj: InboundMessage) -> str:
        rows = list(
            InboundAttachment.objects.filter(organization_id=obj.organization_id, inbound_message=obj)
        )
        if not rows:
            return "—"
        info = self.opts.app_label, self.opts.model_name
        items = []
        for a in rows:
            url = reverse("admin:{}_{}_attachment".format(*info), args=[obj.pk, a.pk])
            if not a.is_stored:
                action = format_html("not stored (over the size or count limit)")
            elif a.is_dangerous:
                action = format_html('<a href="{}">download (warning first)</a>', url)
            else:
                action = format_html('<a href="{}">download</a>', url)
            verdict = (
                format_html(" — <strong>quarantined: {}</strong>", a.danger_reason) if a.is_dangerous else ""
            )
            items.append((a.filename or "(unnamed)", a.content_type, filesizeformat(a.size), verdict, action))
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} ({}, {}){} — {}</li>", items))

    def attachment_view(self, request: HttpRequest, object_id: Any, attachment_id: Any) -> HttpResponse:
        message = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_change_permission(request, message):
            raise PermissionDenied
        attachment = get_object_or_404(
            InboundAttachment,
            pk=attachment_id,
            organization_id=message.organization_id,
            inbound_message=message,
        )
        if not attachment.is_stored:
            raise Http404("This attachment was not stored (over the size or count limit).")
        confirmed = request.method == "POST" and request.POST.get("confirm") == "1"
        if attachment.is_dangerous and not confirmed:
            context = {
                **self.admin_site.each_context(request),
                "title": "This attachment was quarantined",
                "attachment": attachment,
                "opts": self.opts,
                "back": reverse(
                    f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[message.pk]
                ),
            }
            return TemplateResponse(request, "admin/inbox/inboundmessage/attachment_warning.html", context)
        return attachment_response(attachment)
