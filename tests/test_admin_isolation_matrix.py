"""Admin permission and isolation matrices, generated from the admin's URL configuration (issue #13 §4).

Every registered ModelAdmin, with every URL it serves (changelist, add, change, delete, history and its custom
views) and every action, must be declared in `EXPECTED`: a new admin, URL or action without a declared
expectation fails `test_every_admin_url_and_action_is_declared`.

Actors: the owner, admin and editor of organization A (DOM-02 roles; `viewer` is not a DOM-02 role), a staff
user who is a member of organization B only, and a staff user without any membership.
  * changelist and add answer 200 exactly for the roles declared (others: 403 or a redirect to the login);
  * on an object of organization A, the member of B gets no change, history, delete or custom object page
    (403, 404 or a redirect away), and an action posted with A's ids changes nothing.
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import NoReverseMatch, reverse

from owlat.models import Membership
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db

STANDARD = ("changelist", "add", "change", "delete", "history")
ROLES = ("owner", "admin", "editor")
ALL = frozenset(ROLES)
MANAGERS = frozenset({"owner", "admin"})
EDITORS = ALL
NOBODY: frozenset[str] = frozenset()

# model label → (roles that list it, roles that may add, custom URL names, action names). DOM-02: `*:manage` of
# topics, segments, templates, automations, contacts, settings, organization → owner/admin; campaigns:manage →
# editors too; logs and sends are read by every member; operator tables (queues, buckets, axes, users) are
# platform staff only.
EXPECTED: dict[str, tuple[frozenset[str], frozenset[str], tuple[str, ...], tuple[str, ...]]] = {
    "axes.AccessAttempt": (NOBODY, NOBODY, (), ("cleanup_expired_attempts",)),
    "axes.AccessLog": (NOBODY, NOBODY, (), ()),
    "axes.AccessFailureLog": (NOBODY, NOBODY, (), ()),
    "owlat.ApiKey": (ALL, MANAGERS, (), ("revoke_keys",)),
    "owlat.AuditLog": (ALL, NOBODY, (), ()),
    "owlat.Event": (ALL, NOBODY, (), ()),
    "owlat.Organization": (ALL, NOBODY, ("owlat_switch_organization",), ()),
    "owlat.OrganizationSettings": (ALL, NOBODY, (), ()),
    "owlat.Contact": (
        ALL,
        MANAGERS,
        ("owlat_contact_import",),
        ("attest_doi", "erase_permanently", "unsubscribe_all"),
    ),
    "owlat.ContactProperty": (ALL, MANAGERS, (), ()),
    "owlat.Domain": (
        ALL,
        MANAGERS,
        ("owlat_domain_check", "owlat_domain_override", "owlat_domain_rotate_dkim"),
        ("check_now",),
    ),
    "owlat.DueTask": (NOBODY, NOBODY, (), ()),
    "owlat.WorkerHeartbeat": (NOBODY, NOBODY, (), ()),
    "owlat.SendingStat": (ALL, NOBODY, (), ()),
    "owlat.RateBucket": (NOBODY, NOBODY, (), ()),
    "owlat.IdempotencyRecord": (NOBODY, NOBODY, (), ()),
    "owlat.CampaignSender": (ALL, MANAGERS, (), ("make_default",)),
    "owlat.BlockedEmail": (ALL, MANAGERS, (), ()),
    "auth.User": (NOBODY, NOBODY, ("auth_user_password_change",), ()),
    "auth.Group": (NOBODY, NOBODY, (), ()),
    "django_q.Schedule": (NOBODY, NOBODY, (), ()),
    "django_q.Success": (NOBODY, NOBODY, (), ("resubmit_task",)),
    "django_q.Failure": (NOBODY, NOBODY, (), ("resubmit_task",)),
    "django_q.OrmQ": (NOBODY, NOBODY, (), ()),
    "owlat.Topic": (ALL, MANAGERS, (), ()),
    "owlat.Segment": (ALL, MANAGERS, ("owlat_segment_count",), ()),
    "owlat.WebhookEndpoint": (ALL, MANAGERS, (), ()),
    "owlat.WebhookDelivery": (ALL, NOBODY, (), ()),
    "templates.EmailTemplate": (
        ALL,
        MANAGERS,
        (
            "templates_emailtemplate_preview",
            "templates_emailtemplate_send_test",
            "templates_emailtemplate_set_status",
        ),
        ("publish", "unpublish"),
    ),
    "templates.TransactionalEmail": (
        ALL,
        MANAGERS,
        (
            "templates_transactionalemail_preview",
            "templates_transactionalemail_send_test",
            "templates_transactionalemail_set_status",
        ),
        ("publish", "unpublish"),
    ),
    "delivery.ProviderHealth": (NOBODY, NOBODY, (), ()),
    "delivery.EmailSend": (ALL, NOBODY, ("delivery_provider_status",), ("resend_unknown",)),
    "delivery.TransactionalSend": (ALL, NOBODY, (), ("resend_unknown",)),
    "delivery.LocalMessage": (ALL, NOBODY, (), ()),
    "delivery.CampaignSendCounters": (NOBODY, NOBODY, (), ()),
    "automations.Automation": (
        ALL,
        MANAGERS,
        ("automations_automation_template_autocomplete", "automations_automation_transition"),
        ("duplicate_automations",),
    ),
    "automations.AutomationRun": (ALL, NOBODY, (), ()),
    "campaigns.Campaign": (
        ALL,
        ALL,
        ("campaigns_campaign_preview", "campaigns_campaign_schedule", "campaigns_campaign_transition"),
        (),
    ),
    "campaigns.CampaignReview": (NOBODY, NOBODY, ("campaigns_campaignreview_decide",), ("approve_selected",)),
    "inbox.InboundMessage": (ALL, NOBODY, ("inbox_inboundmessage_verb",), ()),
    "inbox.ReviewQueueMessage": (ALL, NOBODY, ("inbox_reviewqueuemessage_verb",), ()),
    "inbox.QuarantinedMessage": (ALL, NOBODY, ("inbox_quarantinedmessage_verb",), ()),
    "inbox.AgentConfig": (ALL, MANAGERS, (), ()),
    "inbox.KnowledgeEntry": (ALL, MANAGERS, (), ()),
    "inbox.CircuitBreaker": (ALL, NOBODY, ("inbox_circuitbreaker_close",), ()),
    "inbox.LlmProviderSetting": (ALL, MANAGERS, (), ()),
    "inbox.HandlingRule": (ALL, MANAGERS, (), ()),
}


def _registry():
    for model, model_admin in admin.site._registry.items():
        prefix = f"{model._meta.app_label}_{model._meta.model_name}_"
        standard = {f"{prefix}{name}" for name in (*STANDARD, "autocomplete")}
        custom = tuple(
            sorted(
                u.name for u in model_admin.get_urls() if getattr(u, "name", None) and u.name not in standard
            )
        )
        actions = tuple(sorted(a if isinstance(a, str) else a.__name__ for a in (model_admin.actions or [])))
        yield model, model_admin, custom, actions


def _user(django_user_model, name, *memberships):
    user = django_user_model.objects.create_user(username=name, password="pw", is_staff=True)
    for org, role in memberships:
        Membership.objects.create(user=user, organization=org, role=role)
    return user


def test_every_admin_url_and_action_is_declared():
    found = {model._meta.label: (custom, actions) for model, _, custom, actions in _registry()}
    assert sorted(set(found) - set(EXPECTED)) == [], "declare these admins in EXPECTED"
    assert sorted(set(EXPECTED) - set(found)) == [], "these declared admins are no longer registered"
    for label, (custom, actions) in found.items():
        assert custom == EXPECTED[label][2], f"{label}: declare its custom URLs"
        assert actions == EXPECTED[label][3], f"{label}: declare its actions"


def test_role_matrix_of_every_admin(client, django_user_model):
    acme = organization_create(name="Acme")
    users = {role: _user(django_user_model, role, (acme, role)) for role in ROLES}
    users["nobody"] = _user(django_user_model, "nobody")
    cells = 0
    for model, _, _, _ in _registry():
        listing, adding, _, _ = EXPECTED[model._meta.label]
        for view, allowed in (("changelist", listing), ("add", adding)):
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}")
            for who, user in users.items():
                client.force_login(user)
                status = client.get(url).status_code
                expected = 200 if who in allowed else 403
                assert status == expected, (model._meta.label, view, who, status)
                cells += 1
    print(f"admin role matrix: {cells} cells ({len(EXPECTED)} admins x 2 views x {len(users)} actors)")


def _acme_objects(acme):
    """One object of organization A for each admin whose objects a member can reach."""
    import datetime as dt

    from automations.models import Automation, AutomationRun
    from campaigns.models import Campaign
    from delivery.models import TransactionalSend
    from owlat.models import ApiKey, Contact, Domain, Segment, Topic, WebhookEndpoint
    from templates.models import EmailTemplate, TransactionalEmail
    from testsupport.api import make_key

    contact = Contact.objects.create(organization=acme, email="ann@acme.test", first_name="Ann")
    template = EmailTemplate.objects.create(organization=acme, name="T", subject="S", html_content="<p>x</p>")
    automation = Automation.objects.create(organization=acme, name="A", trigger_type="contact_created")
    make_key(acme, ["contacts:read"])
    return [
        contact,
        Topic.objects.create(organization=acme, name="News"),
        Segment.objects.create(organization=acme, name="All"),
        template,
        TransactionalEmail.objects.create(
            organization=acme, slug="w", name="W", subject="S", html_content="x"
        ),
        automation,
        AutomationRun.objects.create(
            organization=acme,
            automation=automation,
            contact=contact,
            triggered_by="contact_created",
            started_at=dt.datetime.now(dt.UTC),
        ),
        Campaign.objects.create(organization=acme, name="C", email_template=template),
        Domain.objects.create(organization=acme, domain="acme.test"),
        ApiKey.objects.get(organization=acme),
        WebhookEndpoint.objects.create(
            organization=acme, url="https://hooks.example.com/x", events=["contact.created"]
        ),
        TransactionalSend.objects.create(organization=acme, kind="transactional", email="ann@acme.test"),
    ]


def _refused(response, pk) -> bool:
    if response.status_code in (403, 404, 405):  # 405: a POST-only view asked with GET
        return True
    return response.status_code == 302 and str(pk) not in response["Location"]


def test_another_organizations_member_reaches_no_object(client, django_user_model):
    acme = organization_create(name="Acme")
    beta = organization_create(name="Beta")
    client.force_login(_user(django_user_model, "mallory", (beta, "owner")))
    cells = 0
    for obj in _acme_objects(acme):
        model = type(obj)
        label = model._meta.label
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}_"
        before = model.objects.filter(pk=obj.pk).values().get()
        urls = [reverse(f"{prefix}{view}", args=[obj.pk]) for view in ("change", "delete", "history")]
        for name in EXPECTED[label][2]:
            try:
                urls.append(reverse(f"admin:{name}", args=[obj.pk]))
            except NoReverseMatch:
                continue
        for url in urls:
            for method in ("get", "post"):
                response = getattr(client, method)(url, {"post": "yes"} if method == "post" else None)
                assert _refused(response, obj.pk), (label, method, url, response.status_code)
                cells += 1
        changelist = reverse(f"{prefix}changelist")
        for action in EXPECTED[label][3]:
            client.post(changelist, {"action": action, "_selected_action": [str(obj.pk)], "post": "yes"})
            cells += 1
        client.get(changelist)  # shows (and so consumes) the "doesn't exist" messages that name the id
        listing = client.get(changelist)
        if listing.status_code == 200:
            assert str(obj.pk) not in listing.content.decode(), label
        assert model.objects.filter(pk=obj.pk).values().get() == before, f"{label} was changed"
    print(f"admin cross-organization matrix: {cells} (URL or action, method) cells x 1 foreign member")
