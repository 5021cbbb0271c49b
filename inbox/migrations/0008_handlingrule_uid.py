"""HandlingRule.uid: the rule's id on the API (D-03). Added nullable, filled for existing rows, then made unique
and required (the three steps Django's documentation gives for a unique field with a callable default)."""

import uuid

from django.db import migrations, models


def fill_uids(apps, schema_editor):
    HandlingRule = apps.get_model("inbox", "HandlingRule")
    for rule in HandlingRule.objects.filter(uid__isnull=True).only("pk"):
        rule.uid = uuid.uuid4()
        rule.save(update_fields=["uid"])


class Migration(migrations.Migration):
    dependencies = [
        ("inbox", "0007_knowledge_search_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="handlingrule",
            name="uid",
            field=models.UUIDField(editable=False, null=True),
        ),
        migrations.RunPython(fill_uids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="handlingrule",
            name="uid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
