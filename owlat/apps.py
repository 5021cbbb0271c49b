from django.apps import AppConfig


class OwlatConfig(AppConfig):
    name = "owlat"
    verbose_name = "Owlat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_save
        from django_q.models import Schedule

        from owlat import checks, content_policy  # noqa: F401  (register the system checks)
        from owlat.schedules import schedule_pre_save

        # django-q2's model is a third party's: its saves are checked against the job registry by this receiver
        pre_save.connect(schedule_pre_save, sender=Schedule, dispatch_uid="owlat.schedule_pre_save")

        from django.contrib.auth.signals import user_logged_in

        from owlat.invitations import remember_waiting_invitations

        # Django's sign-in hook: the invitations waiting are counted once per sign-in, for the admin header
        user_logged_in.connect(remember_waiting_invitations, dispatch_uid="owlat.waiting_invitations")
        from owlat.clusters import bind_to_supervisor, connect_activity_receivers

        bind_to_supervisor()  # a qcluster under run_cluster dies with it (nothing elsewhere)
        connect_activity_receivers()

        from owlat.admin.dashboard import register_attention_source
        from owlat.domains.attention import domain_attention

        register_attention_source(domain_attention)  # sending domains not verified / stale (DOM-12)

        from owlat.inuse import register_form_in_use
        from owlat.signup.writes import segments_using_form

        register_form_in_use(segments_using_form)  # "joined through form F" segments

        from owlat.registry import register_sweep
        from owlat.wakeups import wakeups_stale

        register_sweep(
            "owlat.wakeups_stale", wakeups_stale
        )  # a wake-up marker whose task was lost (issue 12)
