"""Periodic jobs of the delivery app (D-05, D-07), upserted by `sync_schedules`."""

from owlat.schedules import ScheduleSpec

SCHEDULES = [
    # D-07 safety net: re-drive orphaned queued rows, flag lost hand-offs as outcome-unknown, and fail
    # outcome-unknown rows after 24 hours with PROVIDER_ACCEPTANCE_UNCONFIRMED.
    ScheduleSpec("delivery.reap_stuck_sends", "delivery.tasks.reap_stuck_sends_task", "* * * * *"),
]
