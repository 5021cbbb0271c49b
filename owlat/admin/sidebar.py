"""The admin sidebar (django-unfold `SIDEBAR["navigation"]`), grouped the way operators think.

Groups: Audience, Messages, Automations, Campaigns, Inbox, Delivery, Settings, and System (platform staff only:
django-q2 tasks and schedules, due tasks, heartbeats, rate buckets, idempotency records, groups).

Entries name models by label; a model that is not registered (an app not written yet) is skipped, never an error.
Registered models that no entry names still appear: the campaigns and inbox apps' models in their groups, others
by app (`APP_GROUPS`), so a new screen is reachable without editing this file. Each entry is shown only when its
`ModelAdmin` lets the request see it (tenancy and DOM-02 roles decide, as on the admin index).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from owlat.admin_tenancy import is_platform_staff


@dataclass(frozen=True)
class Entry:
    model: str  # "app_label.model_name"
    title: str
    icon: str
    query: str = ""  # e.g. "kind__exact=automation": a filtered changelist


SYSTEM = "System"

GROUPS: list[tuple[str, list[Entry]]] = [
    (
        "Audience",
        [
            Entry("owlat.contact", "Contacts", "group"),
            Entry("owlat.topic", "Topics", "label"),
            Entry("owlat.segment", "Segments", "filter_alt"),
            Entry("owlat.signupform", "Sign-up forms", "edit_note"),
            Entry("owlat.contactproperty", "Contact properties", "tune"),
            Entry("owlat.blockedemail", "Suppression list", "block"),
            Entry("owlat.event", "Events", "bolt"),
        ],
    ),
    (
        "Messages",
        [
            Entry("templates.emailtemplate", "Email templates", "article"),
            Entry("templates.transactionalemail", "Transactional emails", "mark_email_read"),
            Entry(
                "delivery.transactionalsend",
                "Transactional sends",
                "outgoing_mail",
                "kind__exact=transactional",
            ),
            Entry("delivery.transactionalsend", "Test sends", "science", "kind__exact=test"),
            Entry("delivery.localmessage", "Local outbox", "inbox"),
        ],
    ),
    (
        "Automations",
        [
            Entry("automations.automation", "Automations", "account_tree"),
            Entry("automations.automationrun", "Runs", "play_circle"),
            Entry(
                "delivery.transactionalsend", "Automation mails", "forward_to_inbox", "kind__exact=automation"
            ),
        ],
    ),
    (
        "Campaigns",
        [
            Entry("campaigns.campaign", "Campaigns", "campaign"),
            Entry("delivery.emailsend", "Campaign sends", "send"),
            # both queues' models are named "review queue": the sidebar says whose
            Entry("campaigns.campaignreview", "Campaigns held for review", "gpp_maybe"),
        ],
    ),
    (
        "Inbox",
        [
            Entry("delivery.transactionalsend", "Agent replies", "reply", "kind__exact=agent_reply"),
            Entry("inbox.reviewqueuemessage", "Replies to review", "rate_review"),
        ],
    ),
    (
        "Delivery",
        [
            Entry("owlat.sendingstat", "Sending statistics", "monitoring"),
            Entry("owlat.domain", "Domains", "dns"),
            Entry("owlat.campaignsender", "Campaign senders", "alternate_email"),
        ],
    ),
    (
        "Settings",
        [
            Entry("owlat.organization", "Organizations", "apartment"),
            Entry("owlat.organizationsettings", "Organization settings", "settings"),
            Entry("auth.user", "Users", "person"),
            Entry("owlat.apikey", "API keys", "key"),
            Entry("owlat.webhookendpoint", "Webhook endpoints", "webhook"),
            Entry("owlat.webhookdelivery", "Webhook deliveries", "history"),
            Entry("owlat.auditlog", "Audit log", "receipt_long"),
        ],
    ),
    (
        SYSTEM,
        [
            Entry("django_q.failure", "Failed tasks", "error"),
            Entry("django_q.ormq", "Queued tasks", "pending"),
            Entry("django_q.schedule", "Schedules", "schedule"),
            Entry("django_q.success", "Successful tasks", "task_alt"),
            Entry("owlat.duetask", "Due tasks", "alarm"),
            Entry("owlat.workerheartbeat", "Worker heartbeats", "monitor_heart"),
            Entry("owlat.ratebucket", "Rate buckets", "speed"),
            Entry("owlat.idempotencyrecord", "Idempotency records", "fingerprint"),
            Entry("delivery.campaignsendcounters", "Campaign send counters", "tag"),
            Entry("delivery.providerhealth", "Provider health", "network_check"),
            Entry("auth.group", "Groups", "groups"),
        ],
    ),
]

# Where a registered model that no entry names goes, by app label (default: Settings).
APP_GROUPS = {
    "owlat": "Settings",
    "templates": "Messages",
    "delivery": "Delivery",
    "automations": "Automations",
    "campaigns": "Campaigns",
    "inbox": "Inbox",
    "django_q": SYSTEM,
    "auth": SYSTEM,
}


def _model_admins() -> dict[str, Any]:
    return {model._meta.label_lower: model_admin for model, model_admin in admin.site._registry.items()}


def _may_see(model_admin: Any, request: HttpRequest) -> bool:
    return bool(
        model_admin.has_module_permission(request)
        and (model_admin.has_view_permission(request) or model_admin.has_change_permission(request))
    )


def _item(
    request: HttpRequest, model_admin: Any, title: str, icon: str, query: str = ""
) -> dict[str, Any] | None:
    opts = model_admin.model._meta
    try:
        link = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    except NoReverseMatch:
        return None
    if query:
        link = f"{link}?{query}"
    item: dict[str, Any] = {"title": title, "icon": icon, "link": link}
    if query:
        # unfold marks a link active when its path is in the request path: with several filtered entries on one
        # changelist, only the one whose query matches is active.
        key, _, value = query.partition("=")
        item["active"] = request.path.startswith(link.split("?")[0]) and request.GET.get(key) == value
    return item


def navigation(request: HttpRequest) -> list[dict[str, Any]]:
    """`UNFOLD["SIDEBAR"]["navigation"]`: the groups and entries this request may see."""
    admins = _model_admins()
    staff = is_platform_staff(getattr(request, "user", None))
    named = {entry.model for _title, entries in GROUPS for entry in entries}
    extra: dict[str, list[str]] = {}
    for label in sorted(admins):
        if label not in named:
            extra.setdefault(APP_GROUPS.get(label.split(".")[0], "Settings"), []).append(label)

    groups: list[dict[str, Any]] = [
        {"items": [{"title": "Dashboard", "icon": "dashboard", "link": reverse("admin:index")}]}
    ]
    for title, entries in GROUPS:
        if title == SYSTEM and not staff:
            continue
        items = []
        for entry in entries:
            model_admin = admins.get(entry.model)
            if model_admin is None or not _may_see(model_admin, request):
                continue
            item = _item(request, model_admin, entry.title, entry.icon, entry.query)
            if item is not None:
                items.append(item)
        for label in extra.get(title, []):
            model_admin = admins[label]
            if _may_see(model_admin, request):
                name = str(model_admin.model._meta.verbose_name_plural)
                item = _item(request, model_admin, name[:1].upper() + name[1:], "chevron_right")
                if item is not None:
                    items.append(item)
        if items:
            groups.append({"title": title, "collapsible": title == SYSTEM, "items": items})
    return groups
