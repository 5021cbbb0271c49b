"""The world `automation_throughput.py` measures: Django set up against the benchmark database, and an
organization with API keys, templates, an email → condition → email automation and its contacts."""

from __future__ import annotations

import os


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "owlat.settings")
    os.environ.setdefault("SECRET_KEY", "bench-secret-key-0123456789abcdef0123456789abcdef")
    os.environ.setdefault("SITE_URL", "http://127.0.0.1:8000")
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_world(n_keys: int, contact_batches: dict[str, int]) -> dict:
    from automations.services import automation_create
    from owlat.apikeys import api_key_create
    from owlat.models import Contact, ContactProperty, ContactPropertyValue
    from templates.models import EmailTemplate
    from testsupport.world import activate, email_step, plan_is_pro_step, sending_organization

    org = sending_organization("Bench", "bench.test")
    first = EmailTemplate.objects.create(
        organization=org,
        name="First",
        subject="Hello {{firstName|'there'}}",
        html_content="<p>Hi {{firstName}}</p>",
    )
    second = EmailTemplate.objects.create(
        organization=org, name="Second", subject="More for {{firstName|'you'}}", html_content="<p>More</p>"
    )
    automation = automation_create(
        organization_id=org.pk,
        actor="bench",
        name="Bench",
        trigger_type="event_received",
        trigger_config={"eventName": "bench"},
        steps=[email_step(first), plan_is_pro_step(yes=None, no=None), email_step(second)],
    )
    activate(automation, "bench")
    keys = [
        api_key_create(organization_id=org.pk, name=f"bench-{i}", scopes=["events:write"])[1]
        for i in range(n_keys)
    ]
    plan = ContactProperty.objects.create(organization=org, key="plan")
    emails: dict[str, list[str]] = {}
    for label, n in contact_batches.items():
        batch = [f"{label}-{i}@example.com" for i in range(n)]
        contacts = Contact.objects.bulk_create(
            [
                Contact(organization=org, email=e, first_name=f"C{i}", source="api")
                for i, e in enumerate(batch)
            ],
            batch_size=2000,
        )
        ContactPropertyValue.objects.bulk_create(
            [
                ContactPropertyValue(
                    organization=org, contact=c, property=plan, value="pro" if i % 2 else "free"
                )
                for i, c in enumerate(contacts)
            ],
            batch_size=2000,
        )
        emails[label] = batch
    return {"org": org, "automation": automation, "keys": keys, "emails": emails}
