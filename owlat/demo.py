"""`manage.py bootstrap`: an organization to log into, and (with `--demo`) a little data to look at.

Idempotent: re-running finds what exists and creates only what is missing. Secrets are shown once — a
generated password and a new API key are returned in clear only when they are created (or, for `make run`,
read back from a local credentials file after checking that they still work).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from owlat.models import (
    ApiKey,
    ContactSource,
    Domain,
    DomainStatus,
    Membership,
    Organization,
    Role,
    Segment,
    Topic,
)

DEMO_ORGANIZATION = "Demo"
DEMO_SENDER_EMAIL = "hello@demo.owlat.local"
DEMO_SENDER_NAME = "Owlat Demo"
DEMO_DOMAIN = "demo.owlat.local"
DEMO_API_KEY_NAME = "Demo key"
ACTOR = "bootstrap"

#: (email, first name, last name, plan, newsletter: "confirmed" | "pending" | None)
DEMO_CONTACTS: tuple[tuple[str, str, str, str, str | None], ...] = (
    ("ada@example.com", "Ada", "Lovelace", "pro", "confirmed"),
    ("grace@example.com", "Grace", "Hopper", "pro", "confirmed"),
    ("alan@example.com", "Alan", "Turing", "free", "confirmed"),
    ("katherine@example.com", "Katherine", "Johnson", "free", "pending"),
    ("linus@example.com", "Linus", "Torvalds", "free", None),
)
NEWSLETTER_TOPIC = "Newsletter"  # double opt-in
UPDATES_TOPIC = "Product updates"  # single opt-in
PRO_SEGMENT = "Pro customers"
PRO_SEGMENT_FILTERS = {
    "logic": "AND",
    "conditions": [{"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}],
}


@dataclasses.dataclass
class DemoData:
    contacts_created: int
    contacts_total: int
    topics: dict[str, Topic]
    segment: Segment
    subscriptions: dict[str, str]  # "<email> → <topic>" → subscribe outcome of this run


@dataclasses.dataclass
class BootstrapResult:
    organization: Organization
    organization_created: bool
    username: str
    user_created: bool
    password: str | None  # in clear when created/set now (or read back from the credentials file)
    api_key: ApiKey
    api_key_created: bool
    raw_api_key: str | None  # in clear only when created now (or read back from the credentials file)
    admin_url: str
    demo: DemoData | None = None


def generate_password() -> str:
    return secrets.token_urlsafe(12)


def _organization_ensure() -> tuple[Organization, bool]:
    from owlat.organizations import organization_create, organization_settings

    org = Organization.objects.filter(name=DEMO_ORGANIZATION).order_by("created_at").first()
    created = org is None
    if org is None:
        org = organization_create(
            name=DEMO_ORGANIZATION, default_from_email=DEMO_SENDER_EMAIL, default_from_name=DEMO_SENDER_NAME
        )
    org_settings = organization_settings(org.pk)
    changed = []
    if not org_settings.default_from_email:
        org_settings.default_from_email = DEMO_SENDER_EMAIL
        changed.append("default_from_email")
    if not org_settings.default_from_name:
        org_settings.default_from_name = DEMO_SENDER_NAME
        changed.append("default_from_name")
    if changed:
        org_settings.save(update_fields=[*changed, "updated_at"])
    domain, _ = Domain.objects.get_or_create(organization=org, domain=DEMO_DOMAIN)
    if domain.status != DomainStatus.VERIFIED:
        # the demo domain has no public DNS: verified through the audited override (owlat.domains), its DKIM key
        # trusted as published (the domain page shows the records a local resolver or checker is fed), so demo
        # mail is signed like real mail
        from owlat.domains.verification import DKIM_TRUST, domain_override

        domain_override(
            domain, actor="system:bootstrap", reason="demo data (bootstrap --demo)", dkim=DKIM_TRUST
        )
    return org, created


def _superuser_ensure(username: str, password: str | None) -> tuple[Any, bool, str | None]:
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        password = password or generate_password()
        user = User.objects.create_superuser(
            username=username, email=f"{username}@{DEMO_DOMAIN}", password=password
        )
        return user, True, password
    if password:
        user.set_password(password)
    user.is_staff = True
    user.is_superuser = True
    user.is_active = True
    user.save()
    return user, False, password


def _api_key_ensure(organization: Organization) -> tuple[ApiKey, bool, str | None]:
    from owlat.apikeys import SCOPES, api_key_create

    existing = (
        ApiKey.objects.filter(
            organization=organization, name=DEMO_API_KEY_NAME, is_active=True, revoked_at__isnull=True
        )
        .order_by("created_at")
        .first()
    )
    if existing is not None:
        return existing, False, None
    key, raw = api_key_create(organization_id=organization.pk, name=DEMO_API_KEY_NAME, scopes=list(SCOPES))
    return key, True, raw


def demo_data_ensure(*, organization: Organization) -> DemoData:
    """Sample contacts, a double-opt-in topic, a single-opt-in topic and a segment (idempotent)."""
    from owlat.contacts import contact_find_or_create
    from owlat.segments import segment_create
    from owlat.topics import doi_attest, topic_create, topic_subscribe

    org_id = organization.pk
    topics = {}
    for name, doi, description in (
        (NEWSLETTER_TOPIC, True, "Monthly newsletter (double opt-in)"),
        (UPDATES_TOPIC, False, "Product announcements (single opt-in)"),
    ):
        topic = Topic.objects.filter(organization_id=org_id, name=name).first()
        if topic is None:
            topic = topic_create(
                organization_id=org_id,
                actor=ACTOR,
                name=name,
                description=description,
                require_double_opt_in=doi,
            )
        topics[name] = topic

    created_count = 0
    subscriptions: dict[str, str] = {}
    for email, first, last, plan, newsletter in DEMO_CONTACTS:
        contact, created = contact_find_or_create(
            organization_id=org_id,
            email=email,
            source=ContactSource.IMPORT,
            actor=ACTOR,
            mode="upsert",
            first_name=first,
            last_name=last,
            properties={"plan": plan},
            fire=False,  # bulk import: no creation triggers/webhooks for sample data
        )
        created_count += created
        subscriptions[f"{email} → {UPDATES_TOPIC}"] = topic_subscribe(
            contact=contact, topic=topics[UPDATES_TOPIC], source="import", actor=ACTOR
        )
        if newsletter == "confirmed":
            # consent recorded by the operator for the sample data (DOM-08 attestation)
            doi_attest(contact=contact, actor=ACTOR, source="bootstrap demo data")
            contact.refresh_from_db()
        if newsletter is not None:
            subscriptions[f"{email} → {NEWSLETTER_TOPIC}"] = topic_subscribe(
                contact=contact, topic=topics[NEWSLETTER_TOPIC], source="import", actor=ACTOR
            )

    segment = Segment.objects.filter(organization_id=org_id, name=PRO_SEGMENT).first()
    if segment is None:
        segment = segment_create(
            organization_id=org_id,
            actor=ACTOR,
            name=PRO_SEGMENT,
            description="Contacts whose plan property is pro",
            filters=PRO_SEGMENT_FILTERS,
        )
    from owlat.contacts import live_contacts
    from owlat.registry import demo_data_hooks

    for hook in demo_data_hooks():  # the apps' sample data (campaigns, …), registered in their ready()
        hook(organization)
    return DemoData(
        contacts_created=created_count,
        contacts_total=live_contacts(org_id).count(),
        topics=topics,
        segment=segment,
        subscriptions=subscriptions,
    )


def bootstrap(
    *,
    username: str = "admin",
    password: str | None = None,
    demo: bool = False,
    credentials_file: Path | str | None = None,
) -> BootstrapResult:
    """Create or find the demo organization, its owner (a superuser) and an API key; `demo` adds sample data.

    With `credentials_file`, new secrets are written there (mode 0600) and, on later runs, read back and shown
    again if they still work (the password still matches, the key still authenticates) — for `make run`.
    """
    with transaction.atomic():
        org, org_created = _organization_ensure()
        user, user_created, clear_password = _superuser_ensure(username, password)
        membership, _ = Membership.objects.get_or_create(
            user=user, organization=org, defaults={"role": Role.OWNER}
        )
        if membership.role != Role.OWNER:
            membership.role = Role.OWNER
            membership.save(update_fields=["role"])
        key, key_created, raw_key = _api_key_ensure(org)
        demo_data = demo_data_ensure(organization=org) if demo else None

    result = BootstrapResult(
        organization=org,
        organization_created=org_created,
        username=username,
        user_created=user_created,
        password=clear_password,
        api_key=key,
        api_key_created=key_created,
        raw_api_key=raw_key,
        admin_url=f"{settings.SITE_URL}/admin/",
        demo=demo_data,
    )
    if credentials_file:
        _sync_credentials_file(Path(credentials_file), result, user)
    return result


def _sync_credentials_file(path: Path, result: BootstrapResult, user: Any) -> None:
    from owlat.apikeys import api_key_authenticate

    stored: dict[str, str] = {}
    if path.exists():
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError):
            stored = {}
    if result.password is None and stored.get("username") == result.username:
        candidate = stored.get("password") or ""
        if candidate and user.check_password(candidate):
            result.password = candidate
    if result.raw_api_key is None and stored.get("api_key"):
        found = api_key_authenticate(stored["api_key"])
        if found is not None and found.pk == result.api_key.pk:
            result.raw_api_key = stored["api_key"]
    data = {"username": result.username}
    if result.password:
        data["password"] = result.password
    if result.raw_api_key:
        data["api_key"] = result.raw_api_key
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)


def bootstrap_report(result: BootstrapResult, *, credentials_file: str | None = None) -> str:
    """The text the command prints."""
    org = result.organization
    lines = [
        f"Organization: {org.name} ({org.pk}) — {'created' if result.organization_created else 'exists'}",
        f"Admin URL:    {result.admin_url}",
        f"Username:     {result.username} — {'created' if result.user_created else 'exists'}",
    ]
    if result.password:
        note = (
            "" if (result.user_created or not credentials_file) else f" (read back from {credentials_file})"
        )
        lines.append(f"Password:     {result.password}{note}")
    else:
        lines.append("Password:     (unchanged; run `manage.py bootstrap --password <new>` to set one)")
    if result.raw_api_key:
        note = "" if result.api_key_created else f" (read back from {credentials_file})"
        lines.append(f"API key:      {result.raw_api_key}{note}")
        if result.api_key_created:
            lines.append("              (shown only now: store it; only its SHA-256 hash is kept)")
    else:
        lines.append(
            f"API key:      '{result.api_key.name}' exists ({result.api_key.key_prefix}…); keys are shown only "
            f"once. Create another with:\n              python manage.py create_api_key --organization "
            f"{org.pk} --name 'Another key' --scopes {','.join(result.api_key.scopes)}"
        )
    if result.demo is not None:
        d = result.demo
        lines.append(
            f"Demo data:    {d.contacts_total} contacts ({d.contacts_created} new), topics "
            f"{', '.join(repr(t) for t in d.topics)}, segment {d.segment.name!r}"
        )
    return "\n".join(lines)
