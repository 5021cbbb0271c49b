"""Automation writes other than status, by concern (statuses are written by `automations.lifecycle` only):

- `validation`: input checks (AUT-15, AUT-31 … AUT-34) and the refusal types `AutomationRefused` /
  `AutomationInvalid`;
- `automations`: create, edit, delete, duplicate (AUT-01, AUT-02) and operator transitions;
- `steps`: structural step edits while draft, with branch targets remapped (AUT-02);
- `events`: the events intake (AUT-30);
- `stats`: the funnel (AUT-35) and the counter backfill (AUT-05);
- `references`: in-use references and contact erasure, reached by other apps through registries.

Everything is re-exported here, so `from automations.services import …` and `services.<name>` keep working.
"""

from automations.services.automations import (
    automation_create,
    automation_delete,
    automation_duplicate,
    automation_transition_operator,
    automation_update,
)
from automations.services.events import ContactNotFound, EventResult, event_record, new_event_id
from automations.services.references import (
    automation_runs_erase_contact,
    automations_using_form,
    automations_using_template,
    automations_using_topic,
)
from automations.services.stats import BackfillReport, automation_funnel, automation_stats_backfill
from automations.services.steps import remap_branches, step_add, step_remove, step_update, steps_reorder
from automations.services.validation import (
    _UNSET,
    DELETE_ACTIVE_MESSAGE,
    NOT_DRAFT_STEP_MESSAGES,
    NOT_DRAFT_TRIGGER_MESSAGE,
    AutomationInvalid,
    AutomationRefused,
    validate_step,
    validate_trigger,
)

__all__ = [
    "DELETE_ACTIVE_MESSAGE",
    "NOT_DRAFT_STEP_MESSAGES",
    "NOT_DRAFT_TRIGGER_MESSAGE",
    "_UNSET",
    "AutomationInvalid",
    "AutomationRefused",
    "BackfillReport",
    "ContactNotFound",
    "EventResult",
    "automation_create",
    "automation_delete",
    "automation_duplicate",
    "automation_funnel",
    "automation_runs_erase_contact",
    "automation_stats_backfill",
    "automation_transition_operator",
    "automation_update",
    "automations_using_form",
    "automations_using_template",
    "automations_using_topic",
    "event_record",
    "new_event_id",
    "remap_branches",
    "step_add",
    "step_remove",
    "step_update",
    "steps_reorder",
    "validate_step",
    "validate_trigger",
]
