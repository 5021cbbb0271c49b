"""Attachments of inbound mail, stored for reviewers (never given to a model).

The file lives in the default storage under a random name (`inbox-attachments/<organization>/<uuid>`), never
the sender's filename, outside every path a public view serves; only the organization's operators download it,
through the message's admin page. `is_dangerous` (an executable, a macro document, HTML, a double extension —
`inbox.phishing.dangerous_attachment`) marks it quarantined: it is offered only behind a warning. An attachment
over `INBOX_ATTACHMENT_MAX_BYTES` (or past `INBOX_ATTACHMENT_MAX_COUNT` per message) keeps its metadata with
`is_stored` false.
"""

from __future__ import annotations

import uuid

from django.db import models


def attachment_path(instance: InboundAttachment, filename: str) -> str:
    return f"inbox-attachments/{instance.organization_id}/{uuid.uuid4().hex}"


class InboundAttachment(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("owlat.Organization", on_delete=models.CASCADE, related_name="+")
    inbound_message = models.ForeignKey(
        "inbox.InboundMessage", on_delete=models.CASCADE, related_name="attachments"
    )
    filename = models.CharField(max_length=255, blank=True)
    content_type = models.CharField(max_length=200, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    file = models.FileField(upload_to=attachment_path, max_length=300, blank=True)
    is_stored = models.BooleanField(default=False)
    is_dangerous = models.BooleanField(default=False)
    danger_reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("created_at", "filename")
        indexes = [models.Index(fields=["organization", "inbound_message"], name="inbox_att_org_msg")]

    def __str__(self) -> str:
        return self.filename or "(unnamed attachment)"
