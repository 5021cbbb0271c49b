from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "delivery"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from delivery import checks, services  # noqa: F401 - checks registers the deploy checks
        from owlat.registry import (
            register_contact_erasure_hook,
            register_doi_started_hook,
            register_unsubscribe_hook,
        )

        register_doi_started_hook(services.doi_email_queue)
        register_unsubscribe_hook(services.on_unsubscribe)
        from delivery.services.hooks import system_email_queue
        from owlat.registry import register_system_mail_sender

        register_system_mail_sender(system_email_queue)  # invitation links
        from delivery.erasure import send_rows_erase

        register_contact_erasure_hook(send_rows_erase)
        from templates.services import register_recipient_links, register_test_sender

        register_test_sender(services.test_email_send)
        register_recipient_links(services.recipient_links)
        from delivery import webhooks  # noqa: F401 - connects the anymail tracking receiver
        from delivery.tasks import reap_stuck_sends_task
        from owlat.registry import register_sweep

        # also run by the dispatcher, outside the queues: orphaned rows move while a queue is stalled
        register_sweep("delivery.reap_stuck_sends", reap_stuck_sends_task)
        from delivery.admin_bounces import deliverability_attention
        from owlat.admin.dashboard import register_attention_source

        register_attention_source(deliverability_attention)  # blocks per receiving domain
        from delivery.campaign_activity import campaign_activity_rows
        from owlat.registry import register_campaign_sends_source

        register_campaign_sends_source(campaign_activity_rows)  # received / opened / clicked campaign X
        from delivery.timeline import campaign_send_rows, other_send_rows
        from owlat.timeline import register_timeline_source

        # the send rows say more than the `email_sent` activity
        register_timeline_source("campaign_sends", campaign_send_rows, supersedes=("email_sent",))
        register_timeline_source("other_sends", other_send_rows, supersedes=("email_sent",))
