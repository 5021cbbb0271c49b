"""Operator handling rules (AGT-17 [orig]), applied to a fresh classification: the first active matching rule
either force-archives the message (`handling_rule_archive`) or relabels its category — but never a complaint,
spam or an urgent message (those keep their label, so their safety gates still hold)."""

from __future__ import annotations

from typing import Any

PROTECTED_CATEGORIES = frozenset({"complaint", "spam"})


def rules_for(organization_id: Any) -> list[dict[str, Any]]:
    from inbox import sql
    from inbox.models import HandlingRule

    if sql.enabled() and organization_id is not None:
        # the classify step's read, once per message: written out and prepared (inbox.sql)
        found = sql.fetchall(sql.rules_sql(), [sql.uuid_text(organization_id)])
        return [dict(zip(sql.RULE_COLUMNS, row, strict=True)) for row in found]
    return list(
        HandlingRule.objects.filter(organization_id=organization_id, is_active=True)
        .order_by("position", "name")
        .values(*sql.RULE_COLUMNS)
    )


def _matches(rule: dict[str, Any], sender: str, subject: str, classification: dict[str, Any]) -> bool:
    value = (rule.get("value") or "").strip().lower()
    if not value:
        return False
    sender = (sender or "").lower()
    if rule["match"] == "sender":
        return sender == value
    if rule["match"] == "sender_domain":
        domain = sender.rpartition("@")[2]
        return domain == value.lstrip("@") or domain.endswith("." + value.lstrip("@"))
    if rule["match"] == "subject":
        return value in (subject or "").lower()
    if rule["match"] == "category":
        return classification.get("category") == value
    return False


def rule_apply(
    rules: list[dict[str, Any]], *, sender: str, subject: str, classification: dict[str, Any]
) -> tuple[str | None, dict[str, Any], str | None]:
    """Pure: (`archive` | `relabel` | None, the classification to keep, the rule's name)."""
    for rule in rules:
        if not _matches(rule, sender, subject, classification):
            continue
        if rule["action"] == "archive":
            return "archive", classification, rule["name"]
        protected = (
            classification.get("category") in PROTECTED_CATEGORIES
            or classification.get("priority") == "urgent"
        )
        if rule["action"] == "relabel" and rule.get("category") and not protected:
            return (
                "relabel",
                {**classification, "category": rule["category"], "relabelledBy": rule["name"]},
                rule["name"],
            )
        return None, classification, None
    return None, classification, None
