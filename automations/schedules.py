"""Periodic jobs of the automations app, upserted by `sync_schedules` (D-05).

Counters are recorded as deltas and folded into the counter rows every minute.
"""

from owlat.schedules import ScheduleSpec

SCHEDULES = [
    # AUT-29: safety net for delays whose original scheduling was lost.
    ScheduleSpec("process pending delays", "automations.tasks.process_pending_delays_task", "*/5 * * * *"),
    # Fold the counter deltas into Automation.stats_* and AutomationStep.stat_*.
    ScheduleSpec("roll up automation counters", "automations.tasks.counters_rollup_task", "* * * * *"),
]
