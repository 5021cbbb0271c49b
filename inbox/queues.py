"""The django-q2 queue of the inbox pipeline: the start, step and send tasks and the inbox's schedules.

They run on `INBOX_QUEUE` (default `inbox`, its own cluster with `Q_INBOX_WORKERS` workers), not on `default`,
which carries automations, customer webhooks, campaign control tasks and housekeeping: a burst there (a campaign
starting, an automation fan-out) does not delay the triage of inbound mail, and a slow model call holds an
inbox worker, not one of those. `INBOX_QUEUE=default` folds the pipeline back onto the default queue (one
cluster fewer on a small install).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def inbox_queue() -> str:
    """The queue name; a name that is not one of `owlat.jobs.QUEUES` is a configuration error."""
    from owlat.jobs import QUEUES

    name = getattr(settings, "INBOX_QUEUE", "") or "inbox"
    if name not in QUEUES:
        raise ImproperlyConfigured(f"INBOX_QUEUE must be one of {', '.join(QUEUES)}, not {name!r}.")
    return name
