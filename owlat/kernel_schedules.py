"""The shared kernel's own periodic jobs (DOM-19), upserted by `sync_schedules`."""

from owlat.schedules import ScheduleSpec

SCHEDULES = [
    # DOM-15: audit-log retention, daily.
    ScheduleSpec("audit retention", "owlat.audit.audit_purge_task", "17 3 * * *"),
    # DOM-09: refresh every segment's cached count, every 30 minutes.
    ScheduleSpec("refresh segment counts", "owlat.segments.segment_counts_refresh_task", "*/30 * * * *"),
    # DOM-18: safety net for webhook deliveries whose attempt was lost with a worker.
    ScheduleSpec(
        "recover webhook deliveries", "owlat.webhooks.webhook_deliveries_recover_task", "*/5 * * * *"
    ),
    # DOM-12: re-check every sending domain's DNS records; stale verifications (>24 h) are logged.
    ScheduleSpec(
        "recheck sending domains", "owlat.domains.verification.domains_recheck_task", "41 */6 * * *"
    ),
    # Unconfirmed sign-ups are deleted once their confirmation link has expired, daily.
    ScheduleSpec(
        "purge unconfirmed sign-ups", "owlat.signup.retention.signup_submissions_purge_task", "23 4 * * *"
    ),
]
