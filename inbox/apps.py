from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from inbox.timeline import inbound_rows
        from owlat.timeline import register_timeline_source

        register_timeline_source("inbound_messages", inbound_rows, supersedes=("inbound_received",))
        from delivery.lifecycle import register_completion_handler
        from inbox.sending import agent_reply_completed

        # AGT-23: the agent-reply row's terminal edge drives the message
        register_completion_handler("agent_reply", agent_reply_completed)

        from inbox.demo import inbox_demo_ensure
        from owlat.registry import register_demo_data_hook

        register_demo_data_hook(inbox_demo_ensure)

        from anymail.signals import inbound

        from inbox.views import anymail_inbound_received

        # django-anymail's inbound webhooks (signature checked by its views) → the receive path
        inbound.connect(anymail_inbound_received, dispatch_uid="inbox.anymail_inbound")

        from inbox.dashboard import (
            awaiting_review,
            needs_retry_messages,
            open_breakers,
            quarantined_messages,
            waiting_while_off,
        )
        from owlat.admin.dashboard import register_attention_source

        register_attention_source(quarantined_messages)
        register_attention_source(awaiting_review)
        register_attention_source(needs_retry_messages)
        register_attention_source(waiting_while_off)
        register_attention_source(open_breakers)  # AGT-20

        from inbox.provider_settings import organization_has_provider
        from owlat.flags import register_model_provider_check

        register_model_provider_check(
            organization_has_provider
        )  # AGT-28/AGT-30: `ai` with the org's own model
