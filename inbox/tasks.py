"""django-q2 entry points: ids in, walker/services called, a short summary out. All idempotent."""

from __future__ import annotations


def message_start_task(message_id: str) -> str:
    from inbox.walker import message_start

    return message_start(message_id)


def step_run_task(message_id: str, action_id: str) -> str:
    from inbox.walker import step_run

    return step_run(message_id, action_id)


def send_approved_reply_task(message_id: str, token: str | None = None) -> str:
    from inbox.sending import send_approved_reply

    return send_approved_reply(message_id, token)


def retry_failed_agent_actions_task() -> str:
    from inbox.retry import failed_actions_retry
    from inbox.walker import stale_steps_resume

    retried = failed_actions_retry()
    resumed = stale_steps_resume()
    return f"retried {retried} failed actions; resumed {resumed} lost steps"


def reconcile_stuck_approved_task() -> str:
    from inbox.sending import stuck_approved_reconcile

    return f"re-enqueued {stuck_approved_reconcile()} stuck sends"


def clarification_timeouts_task() -> str:
    from inbox.clarification import clarification_timeouts_resume

    return f"resumed {clarification_timeouts_resume()} unanswered clarifications"


def poll_imap_mailboxes_task() -> str:
    from inbox.imap_poll import poll_enabled_mailboxes

    return poll_enabled_mailboxes()
