"""The shared kernel's models (spec domain.md): tenancy, access, contacts, topics, segments, suppression,
activities, senders, settings, audit, customer webhooks, and the rows behind background work.

Every tenant row carries `organization` (DOM-01); uniqueness is per organization except the API key hash.
Identifiers that reach URLs, tokens or the API are UUIDs (D-03).

One module per topic: `organizations`, `contacts`, `audience`, `sending`, `webhooks`, and `infrastructure` for
the rows behind background work (due tasks, wake-ups, heartbeats, idempotency records, rate buckets) — apart from the domain.
Import models from `owlat.models`.
"""

from owlat.models.audience import (
    BlockedEmail,
    BlockReason,
    ContactTopic,
    Segment,
    Topic,
)
from owlat.models.contacts import (
    Contact,
    ContactActivity,
    ContactIdentity,
    ContactProperty,
    ContactPropertyValue,
    ContactSource,
    DoiStatus,
    Event,
    IdentityChannel,
    PropertyType,
)
from owlat.models.infrastructure import (
    DueTask,
    IdempotencyRecord,
    RateBucket,
    WakeUp,
    WorkerHeartbeat,
)
from owlat.models.organizations import (
    AbuseStatus,
    ApiKey,
    AuditLog,
    Invitation,
    InvitationStatus,
    Membership,
    Organization,
    OrganizationSettings,
    Role,
)
from owlat.models.sending import (
    CampaignSender,
    DkimKey,
    Domain,
    DomainStatus,
    SendingStat,
)
from owlat.models.signup import (
    SignupFieldKind,
    SignupForm,
    SignupFormDay,
    SignupFormField,
    SignupFormText,
    SignupFormTopic,
    SignupSubmission,
)
from owlat.models.webhooks import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookEndpoint,
)

__all__ = [
    "AbuseStatus",
    "ApiKey",
    "AuditLog",
    "BlockReason",
    "BlockedEmail",
    "CampaignSender",
    "Contact",
    "ContactActivity",
    "ContactIdentity",
    "ContactProperty",
    "ContactPropertyValue",
    "ContactSource",
    "ContactTopic",
    "DkimKey",
    "DoiStatus",
    "Domain",
    "DomainStatus",
    "DueTask",
    "Event",
    "IdempotencyRecord",
    "IdentityChannel",
    "Invitation",
    "InvitationStatus",
    "Membership",
    "Organization",
    "OrganizationSettings",
    "PropertyType",
    "RateBucket",
    "Role",
    "Segment",
    "SendingStat",
    "SignupFieldKind",
    "SignupForm",
    "SignupFormDay",
    "SignupFormField",
    "SignupFormText",
    "SignupFormTopic",
    "SignupSubmission",
    "Topic",
    "WakeUp",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookDeliveryStatus",
    "WebhookEndpoint",
    "WorkerHeartbeat",
]
