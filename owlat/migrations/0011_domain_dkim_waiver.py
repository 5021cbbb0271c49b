"""`Domain.dkim_waived_at`: verified by the staff override without a published DKIM key. Domains the override
verified before this field existed and that have no verified key get it set, so their mail keeps going out
(unsigned, now with a warning) instead of being refused as unsignable."""

from django.db import migrations, models
from django.utils import timezone


def waive_overridden_without_key(apps, schema_editor):
    Domain = apps.get_model("owlat", "Domain")
    DkimKey = apps.get_model("owlat", "DkimKey")
    signing = DkimKey.objects.filter(verified_at__isnull=False, retired_at__isnull=True).values("domain_id")
    Domain.objects.filter(status="verified", verification_overridden_at__isnull=False).exclude(
        pk__in=signing
    ).update(dkim_waived_at=timezone.now())


class Migration(migrations.Migration):
    dependencies = [
        ("owlat", "0010_invitations"),
    ]

    operations = [
        migrations.AddField(
            model_name="domain",
            name="dkim_waived_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(waive_overridden_without_key, migrations.RunPython.noop),
    ]
