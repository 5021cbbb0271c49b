"""Small, explicit, typed registries through which a lower layer reaches a higher one (style.md, Layering).

Higher layers fill them in their `AppConfig.ready()`. A registry call is synchronous, inside the caller's
transaction, and greppable — the control flow written down, unlike a signal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from owlat.models import Contact


@dataclass(frozen=True)
class TriggerEvent:
    kind: str  # contact_created | contact_updated | event_received | topic_subscribed
    organization_id: str
    contact_id: str
    data: dict[str, Any] = field(default_factory=dict)


TriggerListener = Callable[[TriggerEvent], list[str]]
ErasureHook = Callable[["Contact"], None]
DoiStartedHook = Callable[[str, list[str]], None]
UnsubscribeHook = Callable[["Contact", str, "str | None"], None]

_trigger_listeners: list[TriggerListener] = []
_erasure_hooks: list[ErasureHook] = []
_doi_started_hooks: list[DoiStartedHook] = []
_unsubscribe_hooks: list[UnsubscribeHook] = []
DemoDataHook = Callable[[Any], None]
_demo_data_hooks: list[DemoDataHook] = []


def _add(registry: list, fn: Callable) -> Callable:
    if fn not in registry:
        registry.append(fn)
    return fn


def register_trigger_listener(fn: TriggerListener) -> TriggerListener:
    """`fn(event) -> [run ids]`: called for every fired trigger (automations' fanout)."""
    return _add(_trigger_listeners, fn)


def register_contact_erasure_hook(fn: ErasureHook) -> ErasureHook:
    """`fn(contact)`: called inside a permanent erasure (API-17) before the contact row is deleted."""
    return _add(_erasure_hooks, fn)


def register_doi_started_hook(fn: DoiStartedHook) -> DoiStartedHook:
    """`fn(contact_id, topic_ids)`: a double opt-in started; delivery enqueues the confirmation mail."""
    return _add(_doi_started_hooks, fn)


def register_unsubscribe_hook(fn: UnsubscribeHook) -> UnsubscribeHook:
    """`fn(contact, source, campaign_send_id)`: a global unsubscribe happened (DLV-21 attribution)."""
    return _add(_unsubscribe_hooks, fn)


def trigger_listeners() -> tuple[TriggerListener, ...]:
    return tuple(_trigger_listeners)


def erasure_hooks() -> tuple[ErasureHook, ...]:
    return tuple(_erasure_hooks)


def doi_started_hooks() -> tuple[DoiStartedHook, ...]:
    return tuple(_doi_started_hooks)


def unsubscribe_hooks() -> tuple[UnsubscribeHook, ...]:
    return tuple(_unsubscribe_hooks)


def register_demo_data_hook(fn: DemoDataHook) -> DemoDataHook:
    """`fn(organization)`: adds an app's sample data after the kernel's (`bootstrap --demo`); idempotent."""
    return _add(_demo_data_hooks, fn)


def demo_data_hooks() -> tuple[DemoDataHook, ...]:
    return tuple(_demo_data_hooks)


Sweep = Callable[[], str]
_sweeps: dict[str, Sweep] = {}


def register_sweep(name: str, fn: Sweep) -> Sweep:
    """`fn() -> summary`: a recovery sweep the due-task dispatcher runs every `QUEUE_SWEEP_SECONDS` outside
    the worker queues, so it still runs while a queue is stalled. Idempotent."""
    _sweeps[name] = fn
    return fn


def sweeps() -> dict[str, Sweep]:
    return dict(_sweeps)


SystemMailSender = Callable[..., "str | None"]
_system_mail_senders: list[SystemMailSender] = []


def register_system_mail_sender(fn: SystemMailSender) -> SystemMailSender:
    """`fn(*, organization_id, to, subject, text, correlation_id) -> send id | None`: queues a plain mail of the
    installation to one address (an invitation link); delivery fills it. None when it cannot be sent."""
    return _add(_system_mail_senders, fn)


def system_mail_senders() -> tuple[SystemMailSender, ...]:
    return tuple(_system_mail_senders)


CampaignSendsSource = Callable[..., Any]
CampaignPickerSource = Callable[[Any], "list[tuple[str, str, list[str]]]"]
_campaign_sends_sources: list[CampaignSendsSource] = []
_campaign_picker_sources: list[CampaignPickerSource] = []


def register_campaign_sends_source(fn: CampaignSendsSource) -> CampaignSendsSource:
    """`fn(*, organization_id, campaign_id, activity, url=None, contact_id=None) -> QuerySet` of the campaign's
    send rows (with a `contact_id` column) where the contact received / opened / clicked (the link `url`), for the
    campaign conditions of the condition language; `contact_id` may be an `OuterRef`. Delivery fills it."""
    return _add(_campaign_sends_sources, fn)


def campaign_sends_source() -> CampaignSendsSource | None:
    return _campaign_sends_sources[0] if _campaign_sends_sources else None


def register_campaign_picker_source(fn: CampaignPickerSource) -> CampaignPickerSource:
    """`fn(organization_id) -> [(campaign id, label, [link urls])]`: the campaigns (newest first) and their links
    the condition builder offers; campaigns fills it."""
    return _add(_campaign_picker_sources, fn)


def campaign_picker_source() -> CampaignPickerSource | None:
    return _campaign_picker_sources[0] if _campaign_picker_sources else None
