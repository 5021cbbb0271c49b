"""D-03: tenant rows that reach admin or API URLs get random UUID primary keys instead of sequential integers.

Data-preserving: every row keeps its data and gets a fresh UUID; `ContactPropertyValue.property` is re-pointed to
the UUID of the property it referenced (see `_uuid_pk`). Reversible (back to numbered rows).
"""

from django.db import migrations

from owlat.migrations._uuid_pk import UuidPrimaryKey

MODELS = [
    "membership",
    "organizationsettings",
    "contactidentity",
    "contactproperty",
    "contactpropertyvalue",
    "contacttopic",
    "blockedemail",
    "contactactivity",
    "domain",
    "campaignsender",
    "auditlog",
    "webhookattempt",
    "sendingstat",
]


class Migration(migrations.Migration):
    dependencies = [("owlat", "0003_webhook_endpoint_url_outbound_guard")]

    operations = [UuidPrimaryKey(name) for name in MODELS]
