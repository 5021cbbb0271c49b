"""security_scan (AGT-13, AGT-14, AGT-15 and the phishing rule)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from inbox.models import ProcessingStatus as P
from inbox.security import (
    INJECTION_CONFIDENCE_THRESHOLD,
    PATTERN_CONFIDENCE,
    content_hash,
    find_injection,
    guard_check,
    message_urls,
    scan,
)
from inbox.steps import Route, StepContext
from inbox.steps.context import bounded_history, guard_sample, thread_history
from inbox.url_reputation import enabled as url_reputation_enabled
from inbox.url_reputation import unsafe_urls

RUNS_IN = P.SECURITY_CHECK


def execute(ctx: StepContext, input: dict[str, Any]) -> dict[str, Any]:
    from inbox.receive import pipeline_enabled

    m = ctx.message
    result = scan(
        subject=m.subject,
        text_body=m.text_body,
        html_body=m.html_body,
        from_name=m.from_name,
        from_email=m.from_email,
        attachments=m.attachment_meta,
        spf=m.spf_result,
        dmarc=m.dmarc_result,
    )
    released = bool(m.released_content_hash) and m.released_content_hash == content_hash(
        m.subject, m.text_body, m.html_body
    )
    # 5. URL reputation (only with GOOGLE_SAFE_BROWSING_API_KEY; cached; fails open)
    unsafe = unsafe_urls(message_urls(m.text_body, m.html_body)) if url_reputation_enabled() else []
    if unsafe:
        result.phishing_detected = True
        result.phishing_reasons.append(f"unsafe link (Safe Browsing): {unsafe[0][:100]}")
    # the earlier messages the briefing will carry, oldest first: scanned here with this one, and handed to the
    # context step as read (so nothing reaches the drafter that the guard has not seen)
    history = bounded_history(thread_history(m))
    for excerpt in history:
        hit = find_injection(excerpt)
        if hit and not result.injection_detected:
            result.flag("prompt_injection:thread_history", PATTERN_CONFIDENCE, hit)
    if not result.injection_detected and not result.phishing_detected:
        # 4. the guard model reads all the stripped, sender-written text the drafter can see, and only when
        # nothing above already flagged it
        sample = guard_sample(m, history)
        flagged, confidence, reason, unavailable = guard_check(sample, ctx.calls, m.organization_id)
        result.guard_unavailable = unavailable
        if flagged:
            result.flag("llm_prompt_injection", confidence, reason or "guard model")
    return {
        "flags": result.as_flags(ctx.now.isoformat()),
        "guardedHistory": history,
        "released": released,
        "pipelineEnabled": pipeline_enabled(
            m.organization_id, ctx.stored_flags if ctx.stored_flags is not None else _loaded_flags(m)
        ),
    }


def _loaded_flags(m: Any) -> dict[str, Any] | None:
    """The organization's stored flags when the walker loaded its settings row with the message (else None)."""
    from owlat.models import Organization

    if "organization" not in m._state.fields_cache or not Organization.settings.is_cached(m.organization):
        return None
    try:
        return m.organization.settings.feature_flags or {}
    except ObjectDoesNotExist:
        return {}


def route(output: dict[str, Any], input: dict[str, Any], ctx: StepContext) -> Route:
    flags = output["flags"]
    dangerous = (
        (flags["injectionDetected"] and flags["confidence"] >= INJECTION_CONFIDENCE_THRESHOLD)
        or flags["phishingDetected"]
        or bool(flags.get("dangerousAttachments"))
    )
    if dangerous and not output.get("released"):
        return Route.transition(P.QUARANTINED, {"security_flags": flags})
    if flags["spamScore"] >= 80:
        return Route.transition(P.ARCHIVED, {"security_flags": flags, "reason": "spam"})
    if not output.get("pipelineEnabled", True):
        return Route.done()
    return Route.transition(
        P.CLASSIFYING,
        {"security_flags": flags, "context_tier": None},
        next_step="context_retrieval",
        next_input={"guardedHistory": output.get("guardedHistory") or []},
    )
