"""context_retrieval (AGT-16): one briefing string; tier and coverage stored on the message in state."""

from __future__ import annotations

import re
from typing import Any

from inbox import sql
from inbox.fence import fence, new_fence_id
from inbox.models import InboundMessage
from inbox.models import ProcessingStatus as P
from inbox.security import html_to_visible_text, visible_body
from inbox.steps import Route, StepContext
from owlat.models import ContactActivity

RUNS_IN = P.CLASSIFYING
ROUTES_IN_STATE = True
CHARS_PER_TOKEN = 4
BUDGET_TOKENS = 4000
COMPACT_LIMIT_TOKENS = 12000
KEEP_CHARS = 16000
HISTORY_CHARS = 2000
#: our reply to an earlier message, as the history shows it; all history together at most HISTORY_TOTAL_CHARS
REPLY_CHARS = 1500
HISTORY_TOTAL_CHARS = 8000
#: what of a contact's name the briefing shows (a name is sender-written: no markup, no line breaks)
_NAME_CHARS = re.compile(r"[^\w .'-]", re.UNICODE)


#: the most of the current message's text a briefing can carry: every tier keeps at most KEEP_CHARS, with room
#: for the contact line and the untrusted block's markers
CURRENT_MAX_CHARS = KEEP_CHARS - 1000


def current_body(m: InboundMessage) -> str:
    return visible_body(m.text_body, m.html_body)[:CURRENT_MAX_CHARS]


def _current(m: InboundMessage) -> str:
    return f"From: {m.from_email}\nSubject: {m.subject}\n\n{current_body(m)}"


def guard_sample(m: InboundMessage, history: list[str]) -> str:
    """Everything sender-written that the briefing can carry — the sender's and the contact's names, the subject,
    the current message (and its HTML alternative's visible text), the thread history's excerpts — for the scan's
    guard, which reads all of it (`inbox.security.guard_windows`). Knowledge, files and activities are ours."""
    contact = m.contact
    names = [m.from_name] + (
        [contact.first_name or "", contact.last_name or ""] if contact is not None else []
    )
    parts = [" ".join(n for n in names if n), m.subject, current_body(m)]
    if m.text_body and m.html_body:
        parts.append(html_to_visible_text(m.html_body)[:CURRENT_MAX_CHARS])
    parts += history
    return "\n".join(p for p in parts if p and p.strip())


def _recent_activities(contact_id: Any, organization_id: Any) -> list[tuple[str, Any]]:
    """The contact's five latest activities (type, time), newest first."""
    if sql.enabled():
        return sql.fetchall(
            sql.recent_activities_sql(), [sql.uuid_text(contact_id), sql.uuid_text(organization_id)]
        )
    return list(
        ContactActivity.objects.filter(contact_id=contact_id, organization_id=organization_id)
        .order_by("-occurred_at")
        .values_list("activity_type", "occurred_at")[:5]
    )


def thread_history(m: InboundMessage) -> list[InboundMessage]:
    """The thread's five latest other messages from the same contact, newest first, none held in quarantine:
    another sender's mail never reaches this contact's draft. The security scan guards exactly these too."""
    if m.thread_id is None or m.contact_id is None:
        return []
    if sql.enabled():
        found = sql.fetchall(
            sql.thread_history_sql(),
            [
                sql.uuid_text(m.thread_id),
                sql.uuid_text(m.organization_id),
                sql.uuid_text(m.contact_id),
                sql.uuid_text(m.pk),
            ],
        )
        return [sql.build(InboundMessage, row) for row in found]
    return list(
        InboundMessage.objects.filter(
            thread_id=m.thread_id, organization_id=m.organization_id, contact_id=m.contact_id
        )
        .exclude(pk=m.pk)
        .exclude(processing_status=P.QUARANTINED)
        .order_by("-received_at")[:5]
    )


def history_excerpt(h: InboundMessage) -> str:
    """One earlier message as the briefing shows it (and the guard reads it), with our reply to it when one
    was sent (the text that went out, a reviewer's edit included): the drafter sees what we already told the
    customer, so it neither contradicts nor repeats it. Each part is cut at its own limit."""
    text = (
        f"From: {h.from_email} Date: {h.received_at:%Y-%m-%d %H:%M} Subject: {h.subject}\n"
        f"{visible_body(h.text_body, h.html_body)[:HISTORY_CHARS]}"
    )
    if h.processing_status == P.SENT and (h.draft_response or "").strip():
        when = f"{h.processed_at:%Y-%m-%d %H:%M}" if h.processed_at else "-"
        text += f"\nOur reply (sent {when}):\n{h.draft_response.strip()[:REPLY_CHARS]}"
    return text


def bounded_history(newest_first: list[InboundMessage]) -> list[str]:
    """The excerpts of `newest_first` (`thread_history`), oldest first, newest kept first: at most
    HISTORY_TOTAL_CHARS together, so a long thread never crowds the current message out of the briefing."""
    kept: list[str] = []
    total = 0
    for h in newest_first:
        excerpt = history_excerpt(h)
        if total + len(excerpt) > HISTORY_TOTAL_CHARS:
            break
        kept.append(excerpt)
        total += len(excerpt)
    return kept[::-1]


def may_use_internal_knowledge(config: Any) -> bool:
    """Knowledge marked internal enters only a draft that cannot be sent automatically (auto-reply off, or shadow
    mode); the route step refuses to auto-send a draft grounded on it all the same."""
    return config is None or not config.is_auto_reply_enabled or config.shadow_mode


def execute(ctx: StepContext, input: dict[str, Any]) -> dict[str, Any]:
    from inbox.knowledge import knowledge_search
    from inbox.retrievers import related_files

    m = ctx.message
    contact = m.contact
    fence_id = new_fence_id()
    sections: list[str] = []
    contact_line = "Contact: unknown"
    if contact is not None:
        name = _NAME_CHARS.sub("", " ".join(x for x in (contact.first_name, contact.last_name) if x))[:60]
        contact_line = (
            f"Contact: {contact.email} name={name or '-'} language={contact.language or '-'} "
            f"timezone={contact.timezone or '-'}"
        )
    sections.append(contact_line)
    activities = []
    if contact is not None:
        activities = _recent_activities(contact.pk, m.organization_id)
    if activities:
        sections.append(
            "Recent activity:\n" + "\n".join(f"- {t} at {at:%Y-%m-%d %H:%M}" for t, at in activities)
        )
    # the earlier messages exactly as the security scan read them (it hands their excerpts over, oldest first):
    # the guard has seen every character of history the drafter sees
    history = [str(h) for h in input.get("guardedHistory") or []]
    if history:
        sections.append("Thread history:\n" + fence("THREAD_HISTORY", "\n\n".join(history), fence_id))
    current = _current(m)
    fenced_current = "Current message:\n" + fence("CURRENT_MESSAGE", current, fence_id)
    hits = knowledge_search(
        organization_id=m.organization_id,
        text=f"{m.subject}\n{current}",
        limit=10,
        include_internal=may_use_internal_knowledge(ctx.config),
    )
    if hits:
        sections.append("Knowledge:\n" + "\n\n".join(f"[{e.title}]\n{e.content[:1500]}" for e, _ in hits))
    files = related_files(
        organization_id=m.organization_id,
        contact_id=getattr(contact, "pk", None),
        text=f"{m.subject}\n{current}",
    )
    if files:
        sections.append("Related files:\n" + "\n\n".join(f"[{f.title}]\n{f.excerpt[:1500]}" for f in files))
    sections.append(fenced_current)
    briefing = "\n\n".join(sections)
    tokens = len(briefing) // CHARS_PER_TOKEN
    if tokens <= BUDGET_TOKENS:
        tier = "normal"
    elif tokens <= COMPACT_LIMIT_TOKENS:
        tier = "compacted"
        briefing = _compacted(sections)
    else:
        tier = "emergency"
        top = f"Knowledge:\n[{hits[0][0].title}]\n{hits[0][0].content[:1500]}" if hits else ""
        recent = sections[1] if activities else ""
        briefing = _compacted([x for x in (contact_line, top, recent, fenced_current) if x])
    coverage = {
        "contact": contact is not None,
        "thread": bool(history),
        "knowledge": bool(hits),
        "files": bool(files),
        "knowledgeHitCount": len(hits),
        "lowCoverage": not (history or hits or files),
    }
    if hits:
        coverage["topScore"] = round(hits[0][1], 4)
    grounding = [
        {
            "type": "knowledge",
            "id": str(e.pk),
            "title": e.title,
            **({"internal": True} if e.is_internal else {}),
        }
        for e, _ in hits
    ]
    grounding += [{"type": "file", "id": f.id, "title": f.title} for f in files]
    ctx.record = {"context_tier": tier, "context_coverage": coverage, "grounding_sources": grounding}
    return {"briefing": briefing, "tier": tier, "coverage": coverage}


def _compacted(sections: list[str]) -> str:
    """At most KEEP_CHARS: the earliest sections after the contact line go first, whole (an untrusted block is
    never cut open); the current message, last, always stays."""
    kept = list(sections)
    while len(kept) > 2 and len("\n\n".join(kept)) > KEEP_CHARS:
        del kept[1]
    return "\n\n".join(kept)


def route(output: dict[str, Any], input: dict[str, Any], ctx: StepContext) -> Route:
    return Route.in_state("classify", {"briefing": output["briefing"]})
