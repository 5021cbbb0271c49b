"""What tests and benchmarks build alike: an organization that may send, a campaign's queued send rows, and
the automation steps of the welcome-style worlds (email → condition on the `plan` property → email). Django
models are imported inside the functions (see `testsupport/__init__.py`)."""

from __future__ import annotations

from typing import Any


def sending_organization(
    name: str, domain: str, *, sender: str = "hello", sender_name: str = "", postal_address: str = ""
) -> Any:
    """An organization whose default sender `<sender>@<domain>` (named `sender_name`, else `name`) is on a
    verified domain, so it may send at once; with a postal address, it may send campaigns too."""
    from owlat.models import Domain, DomainStatus
    from owlat.organizations import organization_create

    org = organization_create(
        name=name, default_from_email=f"{sender}@{domain}", default_from_name=sender_name or name
    )
    if postal_address:
        org.postal_address = postal_address
        org.save()
    Domain.objects.create(organization=org, domain=domain, status=DomainStatus.VERIFIED)
    return org


def campaign_send_rows(organization: Any, template: Any, context: Any, *, page: int = 1000) -> list[str]:
    """Queued send rows of a new campaign sending `template` to every contact of `organization`, made through
    `create_batch` a page of `page` contacts at a time (a transaction each) and not handed to the campaign pool
    yet; `context` is the campaign's `CampaignSendContext`. Returns the send ids."""
    import uuid

    from django.db import transaction

    from delivery.services import CampaignRecipient, create_batch
    from owlat.models import Contact

    contacts = list(
        Contact.objects.filter(organization=organization).values_list("pk", "email", "first_name")
    )
    campaign_id = str(uuid.uuid4())
    ids: list[str] = []
    for start in range(0, len(contacts), page):
        with transaction.atomic():
            result = create_batch(
                organization_id=organization.pk,
                campaign_id=campaign_id,
                context=context,
                sends=[
                    CampaignRecipient(
                        contact_id=str(pk), email=email, first_name=fn, email_template_id=str(template.pk)
                    )
                    for pk, email, fn in contacts[start : start + page]
                ],
                enqueue=False,
            )
        ids.extend(result.values())
    return ids


def pool_campaign_rows(org: Any, prefix: str, size: int) -> set[str]:
    """`size` contacts `<prefix>NNNN@example.com` of `org` and the rows of a new campaign to them, handed to the
    campaign pool as the campaign walk hands them (`create_batch` with `enqueue=True`); their addresses."""
    import uuid

    from delivery.services import CampaignRecipient, CampaignSendContext, create_batch
    from owlat.models import Contact
    from templates.models import EmailTemplate

    template = EmailTemplate.objects.create(
        organization=org, name="T", subject="Hello {{firstName}}", html_content="<p>Hello {{firstName}}</p>"
    )
    contacts = Contact.objects.bulk_create(
        [Contact(organization=org, email=f"{prefix}{i:04d}@example.com") for i in range(size)]
    )
    create_batch(
        organization_id=org.pk,
        campaign_id=str(uuid.uuid4()),
        context=CampaignSendContext(from_email=f"news@{prefix}.test", from_name=org.name, topic_id=None),
        sends=[
            CampaignRecipient(
                contact_id=str(c.pk),
                email=c.email,
                first_name="",
                last_name="",
                email_template_id=str(template.pk),
            )
            for c in contacts
        ],
        enqueue=True,
    )
    return {c.email for c in contacts}


def email_step(template: Any) -> dict[str, Any]:
    """An automation step that sends `template`."""
    return {"stepType": "email", "config": {"emailTemplateId": str(template.pk)}}


def plan_is_pro_step(*, yes: int | None, no: int | None) -> dict[str, Any]:
    """A condition step: the contact property `plan` equals "pro"; `yes` / `no` are the step indexes it goes to
    (None: the next step)."""
    return {
        "stepType": "condition",
        "config": {
            "condition": {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"},
            "yesBranchStepIndex": yes,
            "noBranchStepIndex": no,
        },
    }


def activate(automation: Any, actor: str) -> None:
    """Activate `automation` as the system (`actor`); a refusal fails the caller."""
    from automations.lifecycle import automation_activate
    from owlat.permissions import Authority

    outcome = automation_activate(
        automation_id=automation.pk,
        organization_id=automation.organization_id,
        actor=actor,
        authority=Authority.system(actor),
    )
    assert outcome.ok, outcome
