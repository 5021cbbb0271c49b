"""Small factories for the delivery tests."""

from __future__ import annotations

import uuid

import pytest

from testsupport.world import sending_organization


@pytest.fixture
def org(db):
    return sending_organization(
        "Acme",
        "acme.test",
        sender="news",
        sender_name="Acme News",
        postal_address="Acme Inc.\n1 Main Street\n12345 Springfield",
    )


@pytest.fixture
def other_org(db):
    from owlat.organizations import organization_create

    return organization_create(name="Other", default_from_email="hi@other.test")


@pytest.fixture
def make_contact(org):
    from owlat.models import Contact

    def make(email="jane@example.com", first_name="Jane", last_name="Doe", organization=None, **extra):
        return Contact.objects.create(
            organization=organization or org, email=email, first_name=first_name, last_name=last_name, **extra
        )

    return make


@pytest.fixture
def contact(make_contact):
    return make_contact()


@pytest.fixture
def template(org):
    from templates.models import EmailTemplate

    return EmailTemplate.objects.create(
        organization=org,
        name="Newsletter",
        subject="Hello {{firstName|'friend'}}",
        html_content=(
            "<html><head><style>p{color:#333333}</style></head><body>"
            "<p>Hi {{firstName|'there'}} {{lastName}}!</p>"
            '<p><a href="https://example.org/read?x=1&amp;y=2">Read more</a> '
            '<a href="mailto:help@acme.test">Mail us</a></p></body></html>'
        ),
        plain_text_content="Hi {{firstName|'there'}}!",
        html_translations={
            "de": {"htmlContent": "<p>Hallo {{firstName}}!</p>", "subject": "Hallo {{firstName}}"}
        },
    )


@pytest.fixture
def campaign_id():
    return str(uuid.uuid4())


@pytest.fixture
def context():
    from delivery.services import CampaignSendContext

    return CampaignSendContext(from_email="news@acme.test", from_name="Acme News", topic_id=None)


@pytest.fixture
def make_campaign_send(org, template, campaign_id, context, make_contact):
    """A campaign send row (created through `create_batch`, not enqueued)."""
    from delivery.models import EmailSend
    from delivery.services import CampaignRecipient, create_batch

    counter = {"n": 0}

    def make(contact=None, *, campaign=None, ctx=None, enqueue=False):
        counter["n"] += 1
        contact = contact or make_contact(email=f"r{counter['n']}@example.com", first_name=f"R{counter['n']}")
        result = create_batch(
            organization_id=org.pk,
            campaign_id=campaign or campaign_id,
            context=ctx or context,
            sends=[
                CampaignRecipient(
                    contact_id=str(contact.pk),
                    email=contact.email,
                    first_name=contact.first_name,
                    last_name=contact.last_name,
                    email_template_id=str(template.pk),
                )
            ],
            enqueue=enqueue,
        )
        return EmailSend.objects.get(pk=result[str(contact.pk)])

    return make


@pytest.fixture
def make_tx_send(org, make_contact):
    from delivery.models import TransactionalSend

    def make(kind="transactional", contact=None, **extra):
        contact = contact or make_contact(email=f"{uuid.uuid4().hex[:8]}@example.com")
        return TransactionalSend.objects.create(
            organization=org,
            kind=kind,
            contact=contact,
            email=contact.email,
            subject="Subject",
            from_email="news@acme.test",
            html_body="<p>Hi</p>",
            text_body="Hi",
            **extra,
        )

    return make
