"""route (AGT-20, AGT-21): every auto-send gate, then shadow mode (on unless set off).

The walker runs `route` inside the transaction that holds the agent configuration's row lock, so the daily
limit check here and the increment on → `approved` (lifecycle effect) cannot be raced past the limit."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

from inbox.breakers import open_breaker
from inbox.lifecycle import daily_limit_reached
from inbox.models import AgentConfig, InboundMessage
from inbox.models import ProcessingStatus as P
from inbox.reply_gates import operator_phrases, promise_in
from inbox.security import find_injection, find_secret, visible_body
from inbox.steps import Route, StepContext
from inbox.steps.context import CURRENT_MAX_CHARS
from owlat.contacts import is_valid_email

RUNS_IN = P.DRAFTING


def execute(ctx: StepContext, input: dict[str, Any]) -> dict[str, Any]:
    return {}


def within_working_hours(config: AgentConfig, now: dt.datetime) -> bool:
    try:
        zone = zoneinfo.ZoneInfo(config.working_hours_timezone or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = zoneinfo.ZoneInfo("UTC")
    local = now.astimezone(zone)
    minute = local.hour * 60 + local.minute
    return (
        local.isoweekday() in config.weekdays
        and config.working_hours_start_minute <= minute < config.working_hours_end_minute
    )


def authenticated_sender(message: InboundMessage) -> bool:
    """The reply may go to the sender unreviewed: a valid address whose From domain is DMARC-aligned authenticated
    (`inbox.sender_auth`, decided at receive) and not refuted by a DMARC failure."""
    if not is_valid_email(message.from_email):
        return False
    return bool(message.sender_authenticated) and message.dmarc_result != "fail"


def uses_internal_knowledge(message: InboundMessage) -> bool:
    """The context gave the draft an entry marked internal (staff only)."""
    return any(
        source.get("type") == "knowledge" and source.get("internal")
        for source in message.grounding_sources or []
        if isinstance(source, dict)
    )


def decide(
    message: InboundMessage,
    config: AgentConfig,
    now: dt.datetime,
    draft_quality: dict | None,
    classification: dict | None,
) -> tuple[str, str, float]:
    """(decision `auto` | `human_review`, reason, score): the first gate that holds the draft back, in order
    (the organization's configuration, the message, the draft), then shadow mode."""
    score = float((draft_quality or {}).get("score") or 0.0)
    classification = classification or message.classification or {}
    reason = (
        _configuration_gate(message, config, now, score)
        or _message_gate(message, classification)
        or _draft_gate(message, config, draft_quality or {})
    )
    if reason is None and config.shadow_mode:
        reason = "Shadow mode: would have sent automatically. Routing to human review."
    if reason is not None:
        return "human_review", reason, score
    return "auto", "All auto-send gates passed.", score


def _configuration_gate(
    message: InboundMessage, config: AgentConfig, now: dt.datetime, score: float
) -> str | None:
    """Why the organization's state or configuration holds this draft back (None: it does not)."""
    threshold = config.confidence_threshold
    breaker = open_breaker(message.organization_id, now)
    if breaker is not None:
        return f"Circuit breaker {breaker.kind} is open: {breaker.reason} Routing to human review."
    if not config.is_auto_reply_enabled:
        return "Auto-reply is disabled. Routing to human review."
    if uses_internal_knowledge(message):
        return "The draft draws on internal knowledge, which is never sent automatically. Routing to human review."
    if score < threshold:
        return f"Draft quality {score:.2f} < threshold {threshold:.1f}. Routing to human review."
    if daily_limit_reached(config, now):
        limit = config.max_daily_auto_replies
        return f"Daily auto-reply limit reached ({config.daily_auto_reply_count}/{limit}). Routing to human review."
    if config.is_working_hours_enabled and not within_working_hours(config, now):
        return "Outside working hours. Routing to human review."
    return None


def _message_gate(message: InboundMessage, classification: dict) -> str | None:
    """Why the message itself (its classification, flags, size or sender) holds the draft back."""
    flags = message.security_flags or {}
    if (message.draft_options or {}).get("clarificationTimedOut"):
        return "The owner did not answer the clarification questions; the draft is a guess. Routing to human review."
    if message.is_auto_send_blocked:
        return "Auto-send is blocked for this message. Routing to human review."
    if classification.get("invalid"):
        invalid = ", ".join(str(v) for v in classification["invalid"][:4])
        return f"The classification answer was invalid ({invalid}). Routing to human review."
    if classification.get("category") == "complaint":
        return "Complaints are never auto-sent. Routing to human review."
    if classification.get("priority") == "urgent":
        return "Urgent messages are never auto-sent. Routing to human review."
    if flags.get("guardUnavailable") or not flags:
        return "The security guard was unavailable. Routing to human review."
    if flags.get("hiddenContent"):
        hidden = ", ".join(flags.get("hiddenReasons") or []) or "hidden text"
        return f"The message hides text from its reader ({hidden}). Routing to human review."
    read = len(visible_body(message.text_body, message.html_body))
    if read > CURRENT_MAX_CHARS:
        return (
            f"The message is longer ({read} characters) than the agent reads ({CURRENT_MAX_CHARS}); a person "
            "must read all of it. Routing to human review."
        )
    if not authenticated_sender(message):
        detail = message.sender_auth_detail or "no results"
        return f"The sender is not authenticated (DMARC-aligned SPF/DKIM: {detail}). Routing to human review."
    return None


def _draft_gate(message: InboundMessage, config: AgentConfig, quality: dict) -> str | None:
    """Why the draft's text or grounding holds it back."""
    draft = message.draft_response or ""
    if find_injection(draft):
        return "The draft contains an injection pattern. Routing to human review."
    if find_secret(draft):
        return "The draft contains a credential or secret. Routing to human review."
    promise = promise_in(draft, operator_phrases(config.auto_send_blocked_phrases))
    if promise:
        return (
            f'The draft promises money, credentials or an account change ("{promise[:60]}"), which is never '
            "sent automatically. Routing to human review."
        )
    if quality.get("grounded") is False or (message.context_coverage or {}).get("lowCoverage", True):
        return "The draft is not grounded in the knowledge base or the contact's thread. Routing to human review."
    if quality.get("ungrounded"):
        claims = ", ".join(str(c) for c in quality["ungrounded"][:3])
        return (
            f"The draft states facts found nowhere in the knowledge base or the thread ({claims}). "
            "Routing to human review."
        )
    return None


def route(output: dict[str, Any], input: dict[str, Any], ctx: StepContext) -> Route:
    decision, reason, score = decide(
        ctx.message, ctx.config, ctx.now, input.get("draft_quality"), input.get("classification")
    )
    agent_decision = {"decision": decision, "reason": reason, "confidence": score}
    if decision == "auto":
        return Route.transition(
            P.APPROVED,
            {
                "source": "auto",
                "send_delay_ms": ctx.config.auto_send_delay_ms,
                "agent_decision": agent_decision,
            },
        )
    transition_input: dict[str, Any] = {"agent_decision": agent_decision}
    if input.get("classification"):
        transition_input["classification"] = input["classification"]
    return Route.transition(P.DRAFT_READY, transition_input)
