# Storage parameters of the run tables (issue 12; owlat/storage.py says why). PostgreSQL only.

from django.db import migrations

from owlat.storage import QUEUE_TABLE_VACUUM, SetStorageParameters


class Migration(migrations.Migration):
    dependencies = [
        ("automations", "0006_step_run_retry_due_at"),
    ]

    operations = [
        # A run's move to its next step (current_step_index, next_step_at) changes no indexed column: with room on
        # the page it is a heap-only update.
        SetStorageParameters("automationrun", {"fillfactor": 80, **QUEUE_TABLE_VACUUM}),
        # Every step run update changes its status, which the claims' partial indexes name: never heap-only, so
        # no room is kept; only vacuumed sooner.
        SetStorageParameters("automationsteprun", QUEUE_TABLE_VACUUM),
    ]
