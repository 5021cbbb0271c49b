"""The onboarding flow of a new organization through the admin (issue 11 item 1, the done-when e2e), shared by
the end-to-end tests that continue from it (sending, bounces):

    flow = onboard_organization(client, dns_stand_in, superuser, name="Nova", domain="nova.test",
                                from_email="hello@nova.test")
    flow.api.post("/transactional", {...})    # an API key with transactional:send of the new organization

Every step goes through the admin pages a person would use — create the organization, set its default sender,
add the sending domain, "Check now" (refused: nothing published), publish the records shown in the stand-in DNS,
"Check now" again — and asserts what the page says. Only the API key and the published transactional email are
made with the services (their admin screens are not part of this flow).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.test import Client
from django.urls import reverse

from testsupport.api import ApiClient, make_key
from testsupport.dns import DnsStandIn


def form_data(response: Any) -> dict[str, Any]:
    """The POST data of an admin change/add page as rendered: every field's current value, plus the management
    forms and rows of its inline formsets."""
    data: dict[str, Any] = {}

    def add(form: Any) -> None:
        for name, field in form.fields.items():
            if getattr(field, "disabled", False):
                continue
            value = form[name].value()
            key = form.add_prefix(name)
            if value is None or value is False:
                continue
            if value is True:
                data[key] = "on"
            elif isinstance(value, list | tuple):
                data[key] = [str(v) for v in value]
            else:
                data[key] = str(value)

    add(response.context["adminform"].form)
    for inline in response.context.get("inline_admin_formsets", []):
        formset = inline.formset
        for name, value in formset.management_form.initial.items():
            data[f"{formset.prefix}-{name}"] = str(value)
        for form in formset.initial_forms:
            add(form)
    return data


@dataclass
class Onboarded:
    org: Any
    domain: Any
    api: ApiClient
    client: Client


def onboard_organization(
    client: Client,
    dns: DnsStandIn,
    superuser: Any,
    *,
    name: str,
    domain: str,
    from_email: str,
    from_name: str = "",
    scopes: list[str] | None = None,
) -> Onboarded:
    from owlat.models import Domain, Organization, OrganizationSettings

    client.force_login(superuser)

    # 1. the organization (platform staff add it; the superuser becomes its owner)
    add_url = reverse("admin:owlat_organization_add")
    data = form_data(client.get(add_url))
    data.update(
        {
            "name": name,
            "memberships-TOTAL_FORMS": "1",
            "memberships-0-member": superuser.get_username(),
            "memberships-0-role": "owner",
        }
    )
    response = client.post(add_url, data)
    assert response.status_code == 302, _errors(response)
    org = Organization.objects.get(name=name)
    client.post(reverse("admin:owlat_switch_organization"), {"organization": str(org.pk)})

    # 2. its default sender (the transactional API sends from it, DOM-12)
    settings_row = OrganizationSettings.objects.get(organization=org)
    change = reverse("admin:owlat_organizationsettings_change", args=[settings_row.pk])
    data = form_data(client.get(change))
    data.update({"default_from_email": from_email, "default_from_name": from_name})
    response = client.post(change, data)
    assert response.status_code == 302, _errors(response)

    # 3. the sending domain: the page lists the records to publish
    response = client.post(reverse("admin:owlat_domain_add"), {"domain": domain, "provider_type": ""})
    assert response.status_code == 302, _errors(response)
    row = Domain.objects.get(organization=org, domain=domain)
    assert row.status == "pending"
    page = client.get(reverse("admin:owlat_domain_change", args=[row.pk])).content.decode()
    for record in row.dns_records:
        assert record["name"] in page and record["value"] in page

    # 4. "Check now" before publishing: refused, every record missing
    check = reverse("admin:owlat_domain_check", args=[row.pk])
    page = client.post(check, follow=True).content.decode()
    assert f"{domain} is failed" in page

    # 5. publish exactly what the page said, check again: verified
    dns.publish(row.dns_records)
    page = client.post(check, follow=True).content.decode()
    assert f"{domain} is verified." in page, page[:3000]
    row.refresh_from_db()
    assert row.status == "verified"

    _, raw = make_key(org, scopes or ["transactional:send", "transactional:read", "contacts:read"])
    return Onboarded(org=org, domain=row, api=ApiClient(raw), client=client)


def publish_transactional(org: Any, *, slug: str, subject: str, html: str) -> Any:
    """A published transactional email (templates' own services)."""
    from templates.lifecycle import transactional_email_set_status
    from templates.models import TransactionalEmail

    email = TransactionalEmail.objects.create(
        organization=org, slug=slug, name=slug.title(), subject=subject, html_content=html
    )
    outcome = transactional_email_set_status(
        transactional_email_id=email.pk, to="published", actor="system:test", organization_id=org.pk
    )
    assert outcome.ok, outcome
    return email


def _errors(response: Any) -> str:
    context = getattr(response, "context", None)
    if not context or "adminform" not in context:
        return f"HTTP {response.status_code}"
    parts = [str(context["adminform"].form.errors)]
    for inline in context.get("inline_admin_formsets", []):
        parts.append(str(inline.formset.errors) + str(inline.formset.non_form_errors()))
    return " ".join(parts)
