"""API-17 erasure of a contact, delivery's part (an erasure hook, run inside `owlat.contacts.contact_erase`'s
transaction before the contact row goes).

* A send row that was never handed to a provider can no longer be sent (its address is gone): it becomes
  `failed` with `CONTACT_ERASED` through the send lifecycle — the only writer of send-row state — so counters
  and campaign completion stay right. A row already handed off keeps its status (a provider webhook or the
  D-07 deadline still resolves it).
* Every send row of the contact keeps its counters and timestamps but loses the personal data: the address
  becomes `[erased]`, names, subject, bodies, data variables and clicked links are cleared, attachments are
  deleted, and the row is soft-deleted (`deleted_at`), so `GET /transactional/{id}` no longer serves it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from delivery.lifecycle import SendRef, send_transition
from delivery.models import EmailSend, SendAttachment, SendStatus, TransactionalSend

ERASED = "[erased]"
ERASED_ERROR_CODE = "CONTACT_ERASED"


def send_rows_erase(contact: Any) -> None:
    """The erasure hook (registered by `DeliveryConfig.ready`)."""
    now = timezone.now()
    for model in (EmailSend, TransactionalSend):
        unsent = model.objects.filter(
            contact_id=contact.pk, status=SendStatus.QUEUED, handed_off_at__isnull=True
        ).values_list("pk", flat=True)
        for pk in list(unsent):
            send_transition(
                SendRef(model.ref_kind, str(pk)),
                SendStatus.FAILED,
                {"error_code": ERASED_ERROR_CODE, "error_message": "The contact was erased before sending"},
            )
    deleted_at = Coalesce(F("deleted_at"), now)
    EmailSend.objects.filter(contact_id=contact.pk).update(
        contact_email=ERASED,
        contact_first_name=None,
        contact_last_name=None,
        personalized_subject=None,
        clicked_links=[],
        deleted_at=deleted_at,
    )
    TransactionalSend.objects.filter(contact_id=contact.pk).update(
        email=ERASED,
        data_variables=None,
        subject=None,
        html_body=None,
        text_body=None,
        clicked_links=[],
        deleted_at=deleted_at,
    )
    SendAttachment.objects.filter(send__contact_id=contact.pk).delete()
