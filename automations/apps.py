from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    name = "automations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from automations.triggers import automation_fanout
        from owlat.registry import register_trigger_listener

        register_trigger_listener(automation_fanout)

        from automations.services import (
            automation_runs_erase_contact,
            automations_using_form,
            automations_using_template,
            automations_using_topic,
        )
        from owlat.inuse import register_form_in_use, register_topic_in_use
        from owlat.registry import register_contact_erasure_hook
        from templates.services import register_template_in_use

        register_topic_in_use(automations_using_topic)
        register_form_in_use(automations_using_form)
        register_template_in_use(automations_using_template)
        register_contact_erasure_hook(automation_runs_erase_contact)

        from automations.dashboard import automation_funnels, breaker_paused_automations
        from owlat.admin.dashboard import register_attention_source, register_funnel_source

        register_attention_source(breaker_paused_automations)
        register_funnel_source(automation_funnels)

        from automations.mail_options import automation_mail_options_lookup
        from delivery.mail_options import register_automation_mail_options

        register_automation_mail_options(automation_mail_options_lookup)

        from automations.recovery import abandoned_step_runs_sweep
        from owlat.registry import register_sweep

        register_sweep("automations.abandoned_step_runs", abandoned_step_runs_sweep)
        from automations.timeline import run_rows, step_run_rows
        from owlat.timeline import register_timeline_source

        register_timeline_source("automation_runs", run_rows)
        register_timeline_source("automation_step_runs", step_run_rows)
