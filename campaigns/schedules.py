"""Periodic jobs of the campaigns app (CMP-14, CMP-36, DLV-10), upserted by `sync_schedules` (D-05)."""

from owlat.schedules import ScheduleSpec

SCHEDULES = [
    ScheduleSpec(
        "process scheduled campaigns", "campaigns.tasks.process_scheduled_campaigns_task", "* * * * *"
    ),
    ScheduleSpec(
        "reconcile sending campaigns", "campaigns.tasks.reconcile_sending_campaigns_task", "* * * * *"
    ),
    ScheduleSpec(
        "reconcile stuck campaign sends", "campaigns.tasks.reconcile_stuck_campaign_sends_task", "*/5 * * * *"
    ),
    ScheduleSpec(
        "refresh sent campaign stats", "campaigns.tasks.refresh_sent_campaign_stats_task", "*/2 * * * *"
    ),
]
