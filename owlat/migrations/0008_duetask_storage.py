# Storage parameters of the due-task table (issue 12; owlat/storage.py says why). PostgreSQL only.

from django.db import migrations

from owlat.storage import QUEUE_TABLE_VACUUM, SetStorageParameters


class Migration(migrations.Migration):
    dependencies = [
        ("owlat", "0007_wakeup"),
    ]

    operations = [
        SetStorageParameters("duetask", QUEUE_TABLE_VACUUM),
    ]
