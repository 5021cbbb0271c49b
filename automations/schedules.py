"""Periodic jobs of the automations app, upserted by `sync_schedules` (D-05).

Counters are atomic single-row increments (AUT-05 allows it), so there is no stats rollup job.
"""

from owlat.schedules import ScheduleSpec

SCHEDULES = [
    # AUT-29: safety net for delays whose original scheduling was lost.
    ScheduleSpec("process pending delays", "automations.tasks.process_pending_delays_task", "*/5 * * * *"),
]
