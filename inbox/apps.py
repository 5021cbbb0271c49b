from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from delivery.lifecycle import register_completion_handler
        from inbox.sending import agent_reply_completed

        # AGT-23: the agent-reply row's terminal edge drives the message
        register_completion_handler("agent_reply", agent_reply_completed)
