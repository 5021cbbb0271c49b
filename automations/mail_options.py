"""The automation engine's answer to delivery's per-automation mail options (delivery.mail_options): the
`unsubscribe_footer` and `track_engagement` switches of each automation, organization-scoped."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection

from automations.models import Automation
from delivery.mail_options import AutomationMailOptions
from owlat.sql import prepared_cursor


def automation_mail_options_lookup(pairs: list[tuple[Any, Any]]) -> dict[str, AutomationMailOptions]:
    """Options of the given `(organization_id, automation_id)` pairs, in one query."""
    wanted = {(str(org), str(aid)) for org, aid in pairs}
    if not wanted:
        return {}
    if connection.vendor == "postgresql":
        # read for every round of a delivery job: one prepared statement, no ORM compilation
        with prepared_cursor() as cursor:
            cursor.execute(
                f"SELECT organization_id, id, unsubscribe_footer, track_engagement FROM {Automation._meta.db_table} "
                "WHERE id = ANY(%s::uuid[]) AND organization_id = ANY(%s::uuid[])",
                [_uuids(aid for _, aid in wanted), _uuids(org for org, _ in wanted)],
            )
            rows = cursor.fetchall()
    else:
        rows = Automation.objects.filter(
            organization_id__in={org for org, _ in wanted}, pk__in={aid for _, aid in wanted}
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
