"""Demo data for `bootstrap --demo` (registered in `CampaignsConfig.ready()`): a sent campaign with a report and
a draft ready to send. Everything goes through the real code paths (services, lifecycle, orchestrator, walker,
delivery's worker with the configured provider, the send lifecycle for opens and clicks). Idempotent."""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from campaigns.models import Campaign
from owlat.permissions import Authority

logger = logging.getLogger(__name__)

ACTOR = "system:bootstrap"
TEMPLATE_NAME = "Owlat demo newsletter"
SENT_NAME = "Welcome to Owlat (demo, sent)"
DRAFT_NAME = "Spring news (demo draft)"
HTML = (
    "<html><body><h1>Hello {{firstName|'there'}}!</h1>"
    "<p>This is Owlat's demo newsletter. Campaigns reach their audience exactly once.</p>"
    '<p><a href="https://github.com/owlat">Read more</a></p></body></html>'
)


def _template(organization: Any) -> Any:
    from templates.models import EmailTemplate

    template = EmailTemplate.objects.filter(organization=organization, name=TEMPLATE_NAME).first()
    if template is None:
        template = EmailTemplate.objects.create(
            organization=organization,
            name=TEMPLATE_NAME,
            subject="News for {{firstName|'you'}}",
            html_content=HTML,
        )
    return template


def campaigns_demo_ensure(organization: Any) -> None:
    from campaigns.orchestrator import start_campaign_send
    from campaigns.services import campaign_create, campaign_send_now
    from campaigns.walker import resolve_campaign_page
    from delivery.providers import delivery_configured
    from owlat.models import Topic
    from owlat.organizations import organization_settings

    topic = (
        Topic.objects.filter(organization=organization, require_double_opt_in=False)
        .order_by("created_at")
        .first()
    )
    if topic is None:
        return
    template = _template(organization)
    sender = organization_settings(organization.pk)
    fields = {
        "email_template_id": template.pk,
        "from_email": sender.default_from_email or None,
        "from_name": sender.default_from_name or organization.name,
        "audience": {"kind": "topic", "topicId": str(topic.pk)},
    }
    if not Campaign.objects.filter(organization=organization, name=DRAFT_NAME).exists():
        campaign_create(
            organization_id=organization.pk,
            actor=ACTOR,
            fields={"name": DRAFT_NAME, **fields},
            authority=Authority.system("demo"),
        )
    if (
        Campaign.objects.filter(organization=organization, name=SENT_NAME).exists()
        or not delivery_configured()
    ):
        return
    campaign = campaign_create(
        organization_id=organization.pk,
        actor=ACTOR,
        fields={"name": SENT_NAME, **fields},
        authority=Authority.system("demo"),
    )
    outcome = campaign_send_now(
        campaign_id=campaign.pk,
        organization_id=organization.pk,
        actor=ACTOR,
        authority=Authority.system("demo"),
    )
    if not outcome.ok:
        logger.warning("demo campaign not sent: %s", outcome.message)
        return
    # run this campaign's pipeline now (the queued copies of these tasks are no-ops for the workers later)
    start_campaign_send(campaign.pk)
    resolve_campaign_page(campaign.pk, "")
    _deliver_and_engage(campaign)


def _deliver_and_engage(campaign: Campaign) -> None:
    from campaigns.completion import stats_rollup, try_complete_campaign
    from delivery.lifecycle import SendRef, send_transition
    from delivery.models import EmailSend
    from delivery.worker import dispatch_batch

    ids = [str(pk) for pk in EmailSend.objects.filter(campaign_id=campaign.pk).values_list("pk", flat=True)]
    dispatch_batch("campaign", ids, pacer=lambda: None)
    now = timezone.now()
    for i, pk in enumerate(ids):
        ref = SendRef("campaign", pk)
        if i % 4 != 3:
            send_transition(ref, "delivered", {"at": now})
        if i % 2 == 0:
            send_transition(ref, "opened", {"at": now})
        if i % 4 == 0:
            send_transition(ref, "clicked", {"at": now, "url": "https://github.com/owlat"})
    try_complete_campaign(campaign.pk)
    stats_rollup(Campaign.objects.get(pk=campaign.pk))  # the report shows the opens and clicks at once
