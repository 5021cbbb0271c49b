"""Periodic jobs of the API layer (collected by `owlat.schedules.sync_schedules`)."""

from owlat.schedules import ScheduleSpec

SCHEDULES = [
    # API-11: idempotency records live 24 h from first use; purge older ones hourly.
    ScheduleSpec("api.idempotency_purge", "owlat.api.idempotency.idempotency_purge_task", "17 * * * *"),
]
