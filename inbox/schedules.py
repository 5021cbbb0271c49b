"""Periodic jobs of the inbox app, upserted by `sync_schedules` (D-05, DOM-19)."""

from inbox.queues import inbox_queue
from owlat.schedules import ScheduleSpec

SCHEDULES = [
    # AGT-24 (and lost step dispatches)
    ScheduleSpec(
        "retry failed agent actions",
        "inbox.tasks.retry_failed_agent_actions_task",
        "*/5 * * * *",
        queue=inbox_queue(),
    ),
    # AGT-23
    ScheduleSpec(
        "reconcile stuck approved inbox messages",
        "inbox.tasks.reconcile_stuck_approved_task",
        "*/5 * * * *",
        queue=inbox_queue(),
    ),
    # AGT-18: unanswered clarification questions time out (the draft becomes a guess, never auto-sent)
    ScheduleSpec(
        "time out unanswered inbox clarifications",
        "inbox.tasks.clarification_timeouts_task",
        "*/30 * * * *",
        queue=inbox_queue(),
    ),
    # existing mailboxes read over IMAP (a fallback beside `run_inbox_imap`'s IDLE; the lease keeps them apart)
    ScheduleSpec(
        "poll IMAP mailboxes", "inbox.tasks.poll_imap_mailboxes_task", "* * * * *", queue=inbox_queue()
    ),
]
