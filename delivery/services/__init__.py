"""Delivery services: creating send rows and handing them to the pools (DLV-03, DLV-14 … DLV-16, AUT-31,
D-06, D-11), campaign counters and reads (DLV-09, DLV-10), and the hooks delivery registers with the kernel
(DOI mail, unsubscribe attribution, erasure).

Send rows are created here and nowhere else; their `status` is written only by `delivery.lifecycle`.
Everything runs inside the caller's transaction; the pool job is enqueued with it (D-05).

Interface for the campaign engine (which delivery does not import):
- `create_batch(organization_id=, campaign_id=, context=CampaignSendContext(...), sends=[CampaignRecipient...],
  at=None)` → `{contact_id: send_id}` for the rows inserted now (DLV-03), enqueued on the campaign pool (`at`
  delays them, CMP-34);
- `campaign_counters(campaign_id)` (DLV-10, incl. `unsubscribed`) and `campaign_counters_reset(...)` (→ sending);
- `campaign_send_stats(campaign_id, ab_variant=None)` (DLV-09 ever-reached buckets, CMP-20);
  `send_buckets(rows_queryset)` (the one bucket definition, over any set of campaign send rows);
  `open_rate_basis(stats)` (opens over the rows sent with an open pixel, or None: not measured);
- `campaign_has_sends` / `campaign_has_queued_sends` (CMP-13; outcome-unknown rows count as finished, D-07);
- `delivery.lifecycle.register_completion_handler("campaign", try_complete_campaign)` (DLV-18) and
  `register_complaint_handler("campaign", fn)` (DLV-11 content-scan flag);
- `delivery.providers.delivery_configured()` (DLV-22, pre-flight `no_delivery_provider`).

Modules: `pools` (enqueue, lookup, re-send), `campaigns` (campaign rows, counters, stats), `senders`,
`automation` (AUT-31), `transactional` (API intake), `direct` (test emails, agent replies), `hooks` (kernel
hooks). Import the public names from `delivery.services`.
"""

from delivery.providers import delivery_configured
from delivery.services.automation import (
    AutomationEmailRequest,
    AutomationEmailResult,
    automation_email_insert_many,
    automation_email_prepare_many,
    automation_email_queue,
    automation_email_queue_many,
)
from delivery.services.campaigns import (
    CampaignRecipient,
    CampaignSendContext,
    campaign_counters,
    campaign_counters_reset,
    campaign_has_queued_sends,
    campaign_has_sends,
    campaign_send_settings_set,
    campaign_send_stats,
    campaign_sends_cancel,
    campaign_sends_requeue,
    create_batch,
    open_rate_basis,
    send_buckets,
)
from delivery.services.direct import (
    agent_reply_queue,
    recipient_links,
    test_email_send,
)
from delivery.services.hooks import (
    doi_email_queue,
    on_unsubscribe,
)
from delivery.services.pools import (
    BATCH_SIZE,
    POOL_FOR_KIND,
    ROW_SCAN_CAP,
    pool_for,
    send_lookup,
    sends_enqueue,
    sends_resend_unknown,
    uuid_or_none,
)
from delivery.services.senders import (
    Sender,
    default_sender,
    sender_domain_problem,
)
from delivery.services.transactional import (
    MAX_SUBJECT_LENGTH,
    SUBJECT_TOO_LONG,
    AttachmentInput,
    IntakeRejected,
    TransactionalIntake,
    transactional_send_create,
)

__all__ = [
    "BATCH_SIZE",
    "MAX_SUBJECT_LENGTH",
    "POOL_FOR_KIND",
    "ROW_SCAN_CAP",
    "SUBJECT_TOO_LONG",
    "AttachmentInput",
    "AutomationEmailRequest",
    "AutomationEmailResult",
    "CampaignRecipient",
    "CampaignSendContext",
    "IntakeRejected",
    "Sender",
    "TransactionalIntake",
    "agent_reply_queue",
    "automation_email_insert_many",
    "automation_email_prepare_many",
    "automation_email_queue",
    "automation_email_queue_many",
    "campaign_counters",
    "campaign_counters_reset",
    "campaign_has_queued_sends",
    "campaign_has_sends",
    "campaign_send_settings_set",
    "campaign_send_stats",
    "campaign_sends_cancel",
    "campaign_sends_requeue",
    "create_batch",
    "default_sender",
    "delivery_configured",
    "doi_email_queue",
    "on_unsubscribe",
    "open_rate_basis",
    "pool_for",
    "recipient_links",
    "send_buckets",
    "send_lookup",
    "sender_domain_problem",
    "sends_enqueue",
    "sends_resend_unknown",
    "test_email_send",
    "transactional_send_create",
    "uuid_or_none",
]
