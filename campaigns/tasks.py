"""django-q2 entry points of the campaigns app: ids in, services out, a short summary back. Every task may run
twice (guards, cursors, unique send rows)."""

from __future__ import annotations

from campaigns import abtest, completion, orchestrator, walker


def campaign_send_start_task(campaign_id: str) -> str:
    """CMP-22 … CMP-29 (the lifecycle's `schedule_campaign_send_orchestrator` effect, and the cron)."""
    return orchestrator.start_campaign_send(campaign_id)


def campaign_resolve_page_task(campaign_id: str, cursor: str = "", token: str = "") -> str:
    """CMP-29: one hop of the page walk (several checkpointed pages)."""
    return walker.resolve_campaign_page(campaign_id, cursor, token)


def campaign_send_remainder_task(campaign_id: str) -> str:
    """CMP-33 (the A/B lifecycle's `schedule_winner_remainder` effect)."""
    return orchestrator.send_winner_to_remainder(campaign_id)


def campaign_ab_auto_winner_task(campaign_id: str) -> str:
    """CMP-19 (the A/B lifecycle's `schedule_auto_winner` effect, a due task after the test window)."""
    return abtest.ab_auto_declare(campaign_id)


def process_scheduled_campaigns_task() -> str:
    return f"started {completion.process_scheduled_campaigns()} due campaigns"


def reconcile_sending_campaigns_task() -> str:
    result = completion.reconcile_sending_campaigns()
    return f"reconciled {result['reconciled']}, completed {result['completed']}"


def refresh_sent_campaign_stats_task() -> str:
    return f"refreshed {completion.refresh_sent_stats()} sent campaigns"


def reconcile_stuck_campaign_sends_task() -> str:
    return f"re-drove {walker.stuck_walks_redrive()} stuck send walks"
