"""Validation of automation input (AUT-01, AUT-02, AUT-15, AUT-31 … AUT-34) and the two refusal types.

Refusals raise `AutomationRefused(reason, message)` (API: 422 `invalid_state` with `data.reason`); invalid
input raises `AutomationInvalid(message, field)` (API: 400 with `data.field`).
"""

from __future__ import annotations

from typing import Any

from automations.lifecycle import TRIGGER_CONFIG_KEYS
from automations.models import StepType, TriggerType
from automations.steps import StepConfigError, validate_step_config
from owlat.event_names import event_name_message, is_valid_event_name


class AutomationRefused(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class AutomationInvalid(Exception):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


#: "argument not given" for partial updates (None is a value).
_UNSET: Any = object()

NOT_DRAFT_STEP_MESSAGES = {
    "add": "Steps can only be added while the automation is a draft",
    "edit": "Steps can only be edited while the automation is a draft",
    "reorder": "Steps can only be reordered while the automation is a draft",
    "remove": "Steps can only be removed while the automation is a draft",
}
NOT_DRAFT_TRIGGER_MESSAGE = "Cannot update trigger on active or paused automations"
DELETE_ACTIVE_MESSAGE = "Cannot delete active automations. Please pause first."
_SHIFT = 1_000_000  # temporary offset that keeps (automation, step_index) unique while indexes move


# --- validation -----------------------------------------------------------------------------------------------


def validate_trigger(
    trigger_type: Any, trigger_config: Any, *, organization_id: Any = None
) -> tuple[str, dict[str, Any] | None]:
    """Shape check of AUT-15 for storage. A draft may lack its config (activation refuses it, AUT-09).
    With `organization_id`, a `topicId` must be a topic of that organization (API-24)."""
    if not isinstance(trigger_type, str) or trigger_type not in TriggerType.values:
        raise AutomationInvalid(f"triggerType must be one of {', '.join(TriggerType.values)}", "triggerType")
    if trigger_config is None:
        return trigger_type, None
    if not isinstance(trigger_config, dict):
        raise AutomationInvalid("triggerConfig must be an object", "triggerConfig")
    key = TRIGGER_CONFIG_KEYS.get(trigger_type)
    if key is None:
        return trigger_type, None  # contact_created takes no configuration
    value = trigger_config.get(key)
    if value is not None and not (isinstance(value, str) and value):
        raise AutomationInvalid(f"triggerConfig.{key} must be a non-empty string", f"triggerConfig.{key}")
    if value is not None and key == "eventName" and not is_valid_event_name(value):
        raise AutomationInvalid(event_name_message("triggerConfig.eventName"), "triggerConfig.eventName")
    if value is not None and key == "topicId" and organization_id is not None:
        from owlat.models import Topic

        if not _exists(Topic, organization_id, value):
            raise AutomationInvalid("Topic not found", "triggerConfig.topicId")
    return trigger_type, ({key: value} if value is not None else {})


def validate_step(
    step_type: Any, config: Any, *, prefix: str = "", organization_id: Any = None
) -> tuple[str, dict[str, Any]]:
    """Shape check per AUT-31 … AUT-34; with `organization_id`, referenced ids must exist there (API-24)."""
    if not isinstance(step_type, str) or step_type not in StepType.values:
        raise AutomationInvalid(f"stepType must be one of {', '.join(StepType.values)}", f"{prefix}stepType")
    try:
        canonical = validate_step_config(step_type, config)
    except StepConfigError as exc:
        field = f"{prefix}config.{exc.field}" if exc.field else f"{prefix}config"
        raise AutomationInvalid(exc.message, field) from exc
    if organization_id is not None:
        _check_step_references(step_type, canonical, organization_id, prefix)
    return step_type, canonical


def _exists(model: Any, organization_id: Any, pk: Any) -> bool:
    import uuid

    try:
        pk = uuid.UUID(str(pk))
    except ValueError:
        return False
    return model.objects.filter(pk=pk, organization_id=organization_id).exists()


def _check_step_references(step_type: str, config: dict[str, Any], organization_id: Any, prefix: str) -> None:
    if step_type == StepType.EMAIL:
        from templates.models import EmailTemplate

        if not _exists(EmailTemplate, organization_id, config["emailTemplateId"]):
            raise AutomationInvalid("Email template not found", f"{prefix}config.emailTemplateId")
    elif step_type == StepType.CONDITION:
        topic_id = config["condition"].get("topicId")
        if topic_id is not None:
            from owlat.models import Topic

            if not _exists(Topic, organization_id, topic_id):
                raise AutomationInvalid("Topic not found", f"{prefix}config.condition.topicId")
