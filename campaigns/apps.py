from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from campaigns.completion import on_campaign_complaint, try_complete_campaign
        from delivery.lifecycle import register_complaint_handler, register_completion_handler

        # DLV-18: after an applied transition of a campaign row out of `queued`
        register_completion_handler("campaign", try_complete_campaign)
        # DLV-11: the suspicious-pattern flag on a complaint
        register_complaint_handler("campaign", on_campaign_complaint)
        # the pool hands out no rows of a paused or cancelled campaign
        from campaigns.lifecycle import campaigns_on_hold
        from delivery.lifecycle import register_campaign_hold

        register_campaign_hold(campaigns_on_hold)
        # dispatch composes from the content snapshot taken at the scan
        from campaigns.snapshot import snapshot_prepared
        from delivery.compose import register_campaign_content

        register_campaign_content(snapshot_prepared)

        from campaigns.services import (
            campaigns_using_segment,
            campaigns_using_template,
            campaigns_using_topic,
        )
        from owlat.inuse import register_segment_in_use, register_topic_in_use
        from templates.services import register_template_in_use

        register_template_in_use(campaigns_using_template)
        register_topic_in_use(campaigns_using_topic)
        register_segment_in_use(campaigns_using_segment)
        # the condition builder's campaign and link pickers
        from campaigns.reports import campaign_picker
        from owlat.registry import register_campaign_picker_source

        register_campaign_picker_source(campaign_picker)

        from campaigns.demo import campaigns_demo_ensure
        from owlat.registry import register_demo_data_hook

        register_demo_data_hook(campaigns_demo_ensure)

        from campaigns.dashboard import held_for_review, stuck_sends
        from owlat.admin.dashboard import register_attention_source

        register_attention_source(held_for_review)  # CMP-12 held campaigns
        register_attention_source(stuck_sends)  # CMP-36 send jobs with no progress

        from owlat.sandbox import register_cookieless_page

        register_cookieless_page("campaign-archive")  # CMP-37: anyone's link, never the reader's session
