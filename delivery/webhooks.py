"""Provider webhooks (DLV-19, D-09): django-anymail's tracking views parse each provider's events and check its
signature; `anymail.signals.tracking` is the library's integration point, and its receiver here is one call into
`provider_event_record`, which maps the event onto the send lifecycle by provider message id.

Hardening:

* Only the providers Owlat supports are mounted (`PROVIDER_WEBHOOKS`: `/webhooks/<slug>/tracking/`), each
  through `provider_webhook_view`, which answers **404** while the provider's webhook authentication is not
  configured (its signing key, or anymail's shared basic-auth `WEBHOOK_SECRET` where that is the provider's only
  mechanism) — never an unsigned event, never a 500. `PROVIDER_WEBHOOKS_ALLOW_UNSIGNED=1` lifts the
  requirement for development only (providers that sign with a key still need it).
* A body the provider's parser cannot read answers **400**; a bad signature answers anymail's 400.
* An event applies only to a send row handed to *that* provider: `provider_type` equal to the provider, or
  unset on a row whose outcome is unknown while that provider is the configured `EMAIL_PROVIDER`.

Unknown ids and refused transitions are acknowledged quietly (200); replays are harmless because the lifecycle
answers a repeated event with `duplicate` (or `recorded` for opens and clicks)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from anymail.exceptions import AnymailAPIError
from anymail.signals import tracking
from anymail.webhooks.amazon_ses import AmazonSESTrackingWebhookView
from anymail.webhooks.mailgun import MailgunTrackingWebhookView
from anymail.webhooks.mandrill import MandrillCombinedWebhookView
from anymail.webhooks.postmark import PostmarkTrackingWebhookView
from anymail.webhooks.resend import ResendTrackingWebhookView
from anymail.webhooks.sendgrid import SendGridTrackingWebhookView
from django.conf import settings
from django.core.exceptions import BadRequest, ImproperlyConfigured
from django.db.models import Q
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from delivery.lifecycle import SendRef, send_transition
from delivery.models import EmailSend, TransactionalSend
from owlat.lifecycle import Outcome

logger = logging.getLogger(__name__)

_SOFT_TYPES = {"softbounce", "transient", "temporary", "soft", "soft_bounce", "soft-bounce", "deferred"}
_FAILED_CODES = {
    "invalid": "INVALID_RECIPIENT",
    "bounced": "INVALID_RECIPIENT",
    "blocked": "CONTENT_REJECTED",
    "spam": "CONTENT_REJECTED",
    "unsubscribed": "INVALID_RECIPIENT",
}


def _find_type(raw: Any, depth: int = 0) -> str | None:
    if depth > 4:
        return None
    if isinstance(raw, dict):
        for key in ("Type", "bounceType", "severity", "bounce_classification", "type"):
            value = raw.get(key)
            if isinstance(value, str) and value.strip().lower() in _SOFT_TYPES:
                return value.strip().lower()
        for value in raw.values():
            found = _find_type(value, depth + 1)
            if found:
                return found
    elif isinstance(raw, list):
        for value in raw[:10]:
            found = _find_type(value, depth + 1)
            if found:
                return found
    return None


def classify_bounce(event: Any) -> str:
    """`soft` for temporary failures (provider type, or a 4xx / 4.x.x MTA response), else `hard`."""
    if _find_type(getattr(event, "esp_event", None)):
        return "soft"
    response = (getattr(event, "mta_response", None) or "").strip()
    if re.match(r"^4\d\d\b", response) or re.search(r"\b4\.\d{1,3}\.\d{1,3}\b", response):
        return "soft"
    return "hard"


def classify_bounce_reason(event: Any) -> tuple[str, bool]:
    """(`bounce_type`, whether it counts toward suppression): a bounce whose diagnostic names a refusal of the
    sender (blocklist, policy, spam or content, rate limit — `delivery.bounces.reasons`), or that the provider
    calls `blocked`/`spam`, is `soft` and never counted; otherwise `classify_bounce`."""
    from delivery.bounces import reasons

    text = " ".join(
        p for p in (getattr(event, "mta_response", None), getattr(event, "description", None)) if p
    )
    reason = reasons.reason_from_text(text[:2000])
    if reason in reasons.BLOCK_REASONS or (getattr(event, "reject_reason", None) or "") in (
        "blocked",
        "spam",
    ):
        return "soft", False
    return classify_bounce(event), True


# --- mounting -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderWebhook:
    """One mounted provider: URL slug (anymail's), `EMAIL_PROVIDER` value, anymail view, and the ANYMAIL
    settings that authenticate it (any one set is enough); `keyed` providers cannot run without their key."""

    slug: str
    provider: str
    view: type
    secrets: tuple[str, ...]
    keyed: bool = False


PROVIDER_WEBHOOKS: tuple[ProviderWebhook, ...] = (
    ProviderWebhook("amazon_ses", "ses", AmazonSESTrackingWebhookView, ("WEBHOOK_SECRET",)),
    ProviderWebhook("postmark", "postmark", PostmarkTrackingWebhookView, ("WEBHOOK_SECRET",)),
    ProviderWebhook(
        "resend", "resend", ResendTrackingWebhookView, ("RESEND_SIGNING_SECRET", "WEBHOOK_SECRET")
    ),
    ProviderWebhook(
        "mailgun", "mailgun", MailgunTrackingWebhookView, ("MAILGUN_WEBHOOK_SIGNING_KEY",), keyed=True
    ),
    ProviderWebhook(
        "sendgrid",
        "sendgrid",
        SendGridTrackingWebhookView,
        ("SENDGRID_TRACKING_WEBHOOK_VERIFICATION_KEY", "WEBHOOK_SECRET"),
    ),
    ProviderWebhook(
        "mandrill", "mandrill", MandrillCombinedWebhookView, ("MANDRILL_WEBHOOK_KEY",), keyed=True
    ),
)

_PARSE_ERRORS = (ValueError, LookupError, TypeError, AttributeError, UnicodeError, RecursionError)


def provider_webhook_configured(hook: ProviderWebhook) -> bool:
    """True when the provider's webhook authentication is configured (or explicitly waived for development)."""
    anymail = getattr(settings, "ANYMAIL", {}) or {}
    if any(anymail.get(name) for name in hook.secrets):
        return True
    return bool(getattr(settings, "PROVIDER_WEBHOOKS_ALLOW_UNSIGNED", False)) and not hook.keyed


def _guarded_class(hook: ProviderWebhook) -> type:
    """The anymail view with malformed bodies answered 400 instead of a 500."""

    def run_validators(self: Any, request: HttpRequest) -> None:
        try:
            hook.view.run_validators(self, request)
        except _PARSE_ERRORS as exc:
            raise BadRequest(f"malformed {hook.slug} webhook") from exc

    def parse_events(self: Any, request: HttpRequest) -> Any:
        try:
            return hook.view.parse_events(self, request)
        except _PARSE_ERRORS as exc:
            raise BadRequest(f"malformed {hook.slug} webhook body") from exc

    def post(self: Any, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return hook.view.post(self, request, *args, **kwargs)
        except (AnymailAPIError, RecursionError) as exc:  # anymail: malformed SNS envelope (Amazon SES)
            raise BadRequest(f"malformed {hook.slug} webhook: {exc}") from exc

    return type(
        f"Owlat{hook.view.__name__}",
        (hook.view,),
        {
            "run_validators": run_validators,
            "parse_events": parse_events,
            "post": post,
            "owlat_provider": hook.provider,
        },
    )


def provider_webhook_view(hook: ProviderWebhook) -> Any:
    """The view mounted at `/webhooks/<slug>/tracking/` (404 while unconfigured, 400 on malformed bodies)."""
    inner = _guarded_class(hook).as_view()

    @csrf_exempt
    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not provider_webhook_configured(hook):
            return JsonResponse({"error": f"{hook.slug} webhooks are not configured"}, status=404)
        try:
            return inner(request, *args, **kwargs)
        except ImproperlyConfigured:
            return JsonResponse({"error": f"{hook.slug} webhooks are not configured"}, status=404)

    return view


# --- events ---------------------------------------------------------------------------------------------


def _clean_message_id(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip() or len(value) > 255 or "\x00" in value:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return None
    return value.strip()


def find_send_of_provider(message_id: str, provider: str) -> SendRef | None:
    """The send row with this provider (or own) message id that was handed to `provider` (DLV-05)."""
    bare = message_id.strip("<>")
    candidates = {message_id, bare, f"<{bare}>"}
    mine = Q(provider_type=provider)
    if getattr(settings, "EMAIL_PROVIDER", "") == provider:
        mine |= Q(provider_type__isnull=True)  # handed off, outcome not yet known (D-07)
    for model in (EmailSend, TransactionalSend):
        pk = (
            model.objects.filter(Q(provider_message_id__in=candidates) | Q(message_id__in=candidates))
            .filter(mine)
            .values_list("pk", flat=True)
            .first()
        )
        if pk is not None:
            return SendRef(model.ref_kind, str(pk))
    return None


def _apply(provider: str, message_id: str, to: str, input: dict[str, Any]) -> Outcome:
    ref = find_send_of_provider(message_id, provider)
    if ref is None:
        return Outcome(ok=False, reason="send_not_found", message="Send not found")
    return send_transition(ref, to, input)


def provider_event_record(*, provider: str, event: Any) -> Outcome | None:
    """Map one normalized anymail tracking event of `provider` to a send-lifecycle input (None: not one)."""
    message_id = _clean_message_id(getattr(event, "message_id", None))
    if not message_id:
        return None

    def transition_by_provider_message_id(mid: str, to: str, input: dict[str, Any]) -> Outcome:
        return _apply(provider, mid, to, input)

    at = getattr(event, "timestamp", None)
    kind = getattr(event, "event_type", None)
    base: dict[str, Any] = {"at": at} if at is not None else {}
    if kind == "delivered":
        return transition_by_provider_message_id(message_id, "delivered", base)
    if kind == "opened":
        return transition_by_provider_message_id(message_id, "opened", base)
    if kind == "clicked":
        return transition_by_provider_message_id(
            message_id, "clicked", {**base, "url": event.click_url or ""}
        )
    if kind == "complained":
        return transition_by_provider_message_id(message_id, "complained", base)
    if kind == "bounced":
        message = event.description or event.mta_response or None
        bounce_type, counts = classify_bounce_reason(event)
        return transition_by_provider_message_id(
            message_id,
            "bounced",
            {
                **base,
                "bounce_type": bounce_type,
                "bounce_message": message,
                "counts_toward_suppression": counts,
            },
        )
    if kind in ("rejected", "failed"):
        code = _FAILED_CODES.get(getattr(event, "reject_reason", None) or "", "UNKNOWN")
        return transition_by_provider_message_id(
            message_id,
            "failed",
            {**base, "error_code": code, "error_message": event.description or event.mta_response or kind},
        )
    return None


@receiver(tracking, dispatch_uid="owlat.delivery.tracking")
def _on_tracking(sender: Any, event: Any, esp_name: str, **kwargs: Any) -> None:
    provider = getattr(sender, "owlat_provider", None)
    if provider is None:  # an anymail view mounted outside PROVIDER_WEBHOOKS: not ours to apply
        logger.warning("%s webhook event from an unmounted view ignored", esp_name)
        return
    outcome = provider_event_record(provider=provider, event=event)
    if outcome is not None and not outcome.ok:
        logger.info(
            "%s webhook event %s for %s: %s", esp_name, event.event_type, event.message_id, outcome.reason
        )
