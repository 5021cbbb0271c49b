"""The automation engine's answer to delivery's per-automation mail options (delivery.mail_options): the
`unsubscribe_footer` and `track_engagement` switches of each automation, organization-scoped."""

from __future__ import annotations

import uuid
from typing import Any

from automations.models import Automation
from delivery.mail_options import AutomationMailOptions


def automation_mail_options_lookup(pairs: list[tuple[Any, Any]]) -> dict[str, AutomationMailOptions]:
    """Options of the given `(organization_id, automation_id)` pairs, in one query."""
    wanted = {(str(org), str(aid)) for org, aid in pairs}
    if not wanted:
        return {}
    rows = Automation.objects.filter(
        organization_id__in=_uuids(org for org, _ in wanted), pk__in=_uuids(aid for _, aid in wanted)
    ).values_list("organization_id", "pk", "unsubscribe_footer", "track_engagement")
    return {
        str(pk): AutomationMailOptions(footer=footer, track=track)
        for org, pk, footer, track in rows
        if (str(org), str(pk)) in wanted
    }


def _uuids(values: Any) -> list[uuid.UUID]:
    """The values that are UUIDs (anything else matches no row, as the ORM's filter had it)."""
    out = set()
    for value in values:
        try:
            out.add(uuid.UUID(value))
        except ValueError:
            continue
    return sorted(out)
