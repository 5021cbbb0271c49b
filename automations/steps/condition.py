"""Condition step (AUT-33): evaluate one condition (AUT-34) against the contact and branch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from automations.steps import StepConfigError, StepContext, StepOutcome


@dataclass(frozen=True)
class ConditionConfig:
    condition: dict[str, Any]
    yes_branch_step_index: int | None
    no_branch_step_index: int | None


def _branch(value: Any) -> int | None:
    # Missing or non-integer → null (AUT-33).
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def parse_config(config: Any) -> ConditionConfig:
    if not isinstance(config, dict):
        raise StepConfigError("Condition config must be an object", None)
    condition = config.get("condition")
    if not isinstance(condition, dict):
        raise StepConfigError("condition is required", "condition")
    if not condition.get("kind"):
        raise StepConfigError("condition.kind is required", "condition.kind")
    return ConditionConfig(
        condition=condition,
        yes_branch_step_index=_branch(config.get("yesBranchStepIndex")),
        no_branch_step_index=_branch(config.get("noBranchStepIndex")),
    )


def canonical_config(config: ConditionConfig) -> dict[str, Any]:
    """Storage form: the condition canonicalised (editor aliases mapped), parse errors as `StepConfigError`."""
    from owlat.conditions import ConditionError, canonicalize_condition

    try:
        condition = canonicalize_condition(config.condition)
    except ConditionError as exc:
        field = f"condition.{exc.field}" if exc.field else "condition"
        raise StepConfigError(exc.message, field) from exc
    return {
        "condition": condition,
        "yesBranchStepIndex": config.yes_branch_step_index,
        "noBranchStepIndex": config.no_branch_step_index,
    }


def execute(ctx: StepContext, config: ConditionConfig) -> StepOutcome:
    from owlat.conditions import evaluate_condition, parse_condition
    from owlat.models import Contact

    condition = parse_condition(config.condition)  # an unparseable condition raises → retries (AUT-33)
    contact = ctx.contact
    if contact is None or contact.deleted_at is not None:
        contact = Contact.objects.filter(
            pk=ctx.contact_id, organization_id=ctx.organization_id, deleted_at__isnull=True
        ).first()
    if contact is None:
        return StepOutcome.failed("contact-not-found")
    taken = (
        config.yes_branch_step_index
        if evaluate_condition(condition, contact)
        else config.no_branch_step_index
    )
    # null → fall through to current + 1 (the walker's default).
    return StepOutcome.completed(next_step_index=taken)


def branch_targets(config: dict[str, Any]) -> list[int]:
    return [
        v
        for v in (config.get("yesBranchStepIndex"), config.get("noBranchStepIndex"))
        if _branch(v) is not None
    ]


def execute_many(items: list[tuple[StepContext, ConditionConfig]]) -> list[StepOutcome | Exception]:
    """A walker batch: the contacts' property values and topics read once for the batch (on PostgreSQL one
    prepared statement, elsewhere two queries)."""
    from owlat.conditions import evaluate_condition, parse_condition

    contacts = {str(ctx.contact.pk): ctx.contact for ctx, _ in items if ctx.contact is not None}
    values: dict[str, dict[str, str]] = {cid: {} for cid in contacts}
    topics: dict[str, set[str]] = {cid: set() for cid in contacts}
    property_rows, topic_rows = _properties_and_topics(list(contacts))
    for cid, org_id, key, value in property_rows:
        if contacts[str(cid)].organization_id == org_id:
            values[str(cid)][key] = value
    for cid, org_id, topic_id in topic_rows:
        if contacts[str(cid)].organization_id == org_id:
            topics[str(cid)].add(str(topic_id))
    out: list[StepOutcome | Exception] = []
    for ctx, config in items:
        try:
            cid = str(ctx.contact.pk) if ctx.contact is not None else None
            if cid is None or ctx.contact.deleted_at is not None:
                out.append(execute(ctx, config))
                continue
            condition = parse_condition(config.condition)
            yes = evaluate_condition(
                condition, ctx.contact, property_values=values[cid], topic_ids=topics[cid]
            )
            taken = config.yes_branch_step_index if yes else config.no_branch_step_index
            out.append(StepOutcome.completed(next_step_index=taken))
        except Exception as exc:  # this item fails alone (retried by the walker)
            out.append(exc)
    return out


def _properties_and_topics(contact_ids: list[str]) -> tuple[list[tuple], list[tuple]]:
    """(contact id, property's organization id, key, value) of the contacts' property values and (contact id,
    organization id, topic id) of their topic memberships: two queries per batch on every database."""
    from owlat.models import ContactPropertyValue, ContactTopic

    if not contact_ids:
        return [], []
    return list(
        ContactPropertyValue.objects.filter(contact_id__in=contact_ids).values_list(
            "contact_id", "property__organization_id", "property__key", "value"
        )
    ), list(
        ContactTopic.objects.filter(contact_id__in=contact_ids).values_list(
            "contact_id", "organization_id", "topic_id"
        )
    )
