"""context_retrieval (AGT-16): one briefing string; tier and coverage stored on the message in state."""

from __future__ import annotations

import functools
from typing import Any

from inbox import rows
from inbox.models import InboundMessage
from inbox.models import ProcessingStatus as P
from inbox.security import visible_body
from inbox.steps import Route, StepContext
from owlat.models import ContactActivity

RUNS_IN = P.CLASSIFYING
ROUTES_IN_STATE = True
CHARS_PER_TOKEN = 4
BUDGET_TOKENS = 4000
COMPACT_LIMIT_TOKENS = 12000
KEEP_CHARS = 16000


def _current(m: InboundMessage) -> str:
    return f"From: {m.from_email}\nSubject: {m.subject}\n\n{visible_body(m.text_body, m.html_body)}"


def _recent_activities(contact_id: Any, organization_id: Any) -> list[tuple[str, Any]]:
    """The contact's five latest activities (type, time), newest first."""
    if rows.enabled():
        sql = (
            f"SELECT activity_type, occurred_at FROM {rows.table(ContactActivity)} "
            "WHERE contact_id = %s::uuid AND organization_id = %s::uuid ORDER BY occurred_at DESC LIMIT 5"
        )
        return rows.fetchall(sql, [rows.uuid_text(contact_id), rows.uuid_text(organization_id)])
    return list(
        ContactActivity.objects.filter(contact_id=contact_id, organization_id=organization_id)
        .order_by("-occurred_at")
        .values_list("activity_type", "occurred_at")[:5]
    )


def _thread_history(m: InboundMessage) -> list[InboundMessage]:
    """The thread's five latest other messages of the organization, newest first."""
    if rows.enabled():
        found = rows.fetchall(
            _history_sql(),
            [rows.uuid_text(m.thread_id), rows.uuid_text(m.organization_id), rows.uuid_text(m.pk)],
        )
        return [rows.build(InboundMessage, row) for row in found]
    return list(
        InboundMessage.objects.filter(thread_id=m.thread_id, organization_id=m.organization_id)
        .exclude(pk=m.pk)
        .order_by("-received_at")[:5]
    )


@functools.cache
def _history_sql() -> str:
    return (
        f"SELECT {rows.select_list('m', InboundMessage)} FROM {rows.table(InboundMessage)} AS m "
        "WHERE m.thread_id = %s::uuid AND m.organization_id = %s::uuid AND NOT (m.id = %s::uuid) "
        "ORDER BY m.received_at DESC LIMIT 5"
    )


def execute(ctx: StepContext, input: dict[str, Any]) -> dict[str, Any]:
    from inbox.knowledge import knowledge_search
    from inbox.retrievers import related_files

    m = ctx.message
    contact = m.contact
    sections: list[str] = []
    contact_line = "Contact: unknown"
    if contact is not None:
        name = " ".join(x for x in (contact.first_name, contact.last_name) if x)
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
    history = []
    if m.thread_id:
        history = _thread_history(m)
    if history:
        sections.append(
            "Thread history:\n"
            + "\n\n".join(
                f"From: {h.from_email} Date: {h.received_at:%Y-%m-%d %H:%M} Subject: {h.subject}\n"
                f"{visible_body(h.text_body, h.html_body)[:2000]}"
                for h in reversed(history)
            )
        )
    current = _current(m)
    hits = knowledge_search(organization_id=m.organization_id, text=f"{m.subject}\n{current}", limit=10)
    if hits:
        sections.append("Knowledge:\n" + "\n\n".join(f"[{e.title}]\n{e.content[:1500]}" for e, _ in hits))
    files = related_files(
        organization_id=m.organization_id,
        contact_id=getattr(contact, "pk", None),
        text=f"{m.subject}\n{current}",
    )
    if files:
        sections.append("Related files:\n" + "\n\n".join(f"[{f.title}]\n{f.excerpt[:1500]}" for f in files))
    sections.append("Current message:\n" + current)
    briefing = "\n\n".join(sections)
    tokens = len(briefing) // CHARS_PER_TOKEN
    if tokens <= BUDGET_TOKENS:
        tier = "normal"
    elif tokens <= COMPACT_LIMIT_TOKENS:
        tier = "compacted"
        briefing = briefing[-KEEP_CHARS:]
    else:
        tier = "emergency"
        top = f"Knowledge:\n[{hits[0][0].title}]\n{hits[0][0].content[:1500]}" if hits else ""
        recent = sections[1] if activities else ""
        briefing = "\n\n".join(x for x in (contact_line, top, recent, "Current message:\n" + current) if x)
        briefing = briefing[:KEEP_CHARS]
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
    grounding = [{"type": "knowledge", "id": str(e.pk), "title": e.title} for e, _ in hits]
    grounding += [{"type": "file", "id": f.id, "title": f.title} for f in files]
    ctx.record = {"context_tier": tier, "context_coverage": coverage, "grounding_sources": grounding}
    return {"briefing": briefing, "tier": tier, "coverage": coverage}


def route(output: dict[str, Any], input: dict[str, Any], ctx: StepContext) -> Route:
    return Route.in_state("classify", {"briefing": output["briefing"]})
