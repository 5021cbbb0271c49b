"""The django-q2 queue of a campaign's control tasks: the orchestrator, the recipient walk's page hops and the
A/B auto-winner and remainder tasks.

They run on `CAMPAIGN_CONTROL_QUEUE` (default `default`), not on the campaign pool's queue, which holds one job
per 50 rows of every organization's sends: a campaign started while another organization's large send fills
the pool's queue still starts, walks and hands its rows to the pool at once, where the fair pool
(`delivery.fairness`) serves it beside the large one instead of after it.
"""

from __future__ import annotations


def control_queue() -> str:
    from django.conf import settings

    return getattr(settings, "CAMPAIGN_CONTROL_QUEUE", "") or "default"
