# Storage parameters of the send tables (issue 12; owlat/storage.py says why). PostgreSQL only.

from django.db import migrations

from owlat.storage import QUEUE_TABLE_VACUUM, SetStorageParameters

# A send row's claim (claimed_at, claim_token, dispatch_attempts) and hand-off (handed_off_at, message_id) change
# no indexed column: with room on the page they are heap-only updates, no entry in any of the table's indexes.
SEND_TABLE = {"fillfactor": 80, **QUEUE_TABLE_VACUUM}


class Migration(migrations.Migration):
    dependencies = [
        ("delivery", "0006_send_redriven_at"),
    ]

    operations = [
        SetStorageParameters("transactionalsend", SEND_TABLE),
        SetStorageParameters("emailsend", SEND_TABLE),
    ]
