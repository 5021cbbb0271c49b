"""Inbound mail through an ESP (django-anymail's inbound webhooks): `/webhooks/<slug>/inbound/` for Amazon SES,
Postmark, Resend, Mailgun and SendGrid. anymail's views check each provider's signature and parse the message;
`anymail.signals.inbound` hands it to the inbox's receive path (the organization found by the recipient's
verified domain, `inbox.views.anymail_inbound_received`).

Mounted as the tracking webhooks are (`delivery.webhooks.provider_webhook_view`): **404** while the provider's
authentication is not configured, 400 on a body the parser cannot read, anymail's 400 on a bad signature. The
secrets: anymail's shared basic-auth `WEBHOOK_SECRET` (SES, Postmark, SendGrid — which has no inbound signature),
`RESEND_INBOUND_SECRET` (Resend's Svix signature), `MAILGUN_WEBHOOK_SIGNING_KEY` (Mailgun, always)."""

from __future__ import annotations

from anymail.webhooks.amazon_ses import AmazonSESInboundWebhookView
from anymail.webhooks.mailgun import MailgunInboundWebhookView
from anymail.webhooks.postmark import PostmarkInboundWebhookView
from anymail.webhooks.resend import ResendInboundWebhookView
from anymail.webhooks.sendgrid import SendGridInboundWebhookView

from delivery.webhooks import ProviderWebhook

INBOUND_WEBHOOKS: tuple[ProviderWebhook, ...] = (
    ProviderWebhook("amazon_ses", "ses", AmazonSESInboundWebhookView, ("WEBHOOK_SECRET",)),
    ProviderWebhook("postmark", "postmark", PostmarkInboundWebhookView, ("WEBHOOK_SECRET",)),
    ProviderWebhook("resend", "resend", ResendInboundWebhookView, ("RESEND_INBOUND_SECRET",), keyed=True),
    ProviderWebhook(
        "mailgun", "mailgun", MailgunInboundWebhookView, ("MAILGUN_WEBHOOK_SIGNING_KEY",), keyed=True
    ),
    ProviderWebhook("sendgrid", "sendgrid", SendGridInboundWebhookView, ("WEBHOOK_SECRET",)),
)
