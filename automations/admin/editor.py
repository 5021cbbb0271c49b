"""The automation editor (D-12: the admin is the product UI): the trigger and its config, steps inline in order
(branch targets chosen from the step list), lifecycle buttons that call `automations.lifecycle` and show its
message, counters and the step funnel. Structural step edits go through `automations.services` (draft only, branch
targets remapped, AUT-02); the status is read-only.
"""

from __future__ import annotations

import copy
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html, format_html_join

from automations import services
from automations.admin.confirm import CONFIRMED_VERBS, automation_confirmation
from automations.admin.simulate import simulate_view
from automations.admin_forms.display import step_summary
from automations.admin_forms.editor import AutomationForm, StepForm, StepFormSet
from automations.admin_forms.views import template_autocomplete_view
from automations.lifecycle import PUBLIC_ACTIONS
from automations.models import (
    Automation,
    AutomationStatus,
    AutomationStep,
    StepType,
)
from owlat.admin_confirm import confirmation_page
from owlat.admin_tenancy import TenantModelAdmin, TenantTabularInline, get_tenancy
from owlat.permissions import Authority

LIFECYCLE_BUTTONS = {
    AutomationStatus.DRAFT: [("activate", "Activate…")],
    AutomationStatus.ACTIVE: [("pause", "Pause…")],
    AutomationStatus.PAUSED: [("resume", "Resume…"), ("revert-to-draft", "Revert to draft")],
}


class StatusCountFilter(admin.SimpleListFilter):
    """Filter by status, with the number of automations per status (AUT-35)."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        counts = dict(
            model_admin.get_queryset(request).order_by().values_list("status").annotate(n=Count("pk"))
        )
        return [(s.value, f"{s.label} ({counts.get(s.value, 0)})") for s in AutomationStatus]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(status=self.value())
        return queryset


# --- the step inline (forms: automations/admin_forms) -------------------------------------------------------------


class StepInline(TenantTabularInline):
    model = AutomationStep
    form = StepForm
    formset = StepFormSet
    extra = 0
    ordering = ("step_index",)
    # The per-step counts are in the automation's "step funnel" table (exact: stored counts plus pending deltas),
    # not repeated here from the stored columns alone.
    fields = ("step_label", "step_type", "settings", "position")
    readonly_fields = ("step_label", "summary")
    manage_permission = "automations:manage"
    feature_flag = "automations"

    def _draft(self, obj: Automation | None) -> bool:
        return obj is None or obj.status == AutomationStatus.DRAFT

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._draft(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._draft(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._draft(obj) and super().has_delete_permission(request, obj)

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if self._draft(obj):
            return super().get_fields(request, obj)
        return ("step_label", "step_type", "summary")  # locked outside draft

    @admin.display(description="what it does")
    def summary(self, step: AutomationStep) -> str:
        return step_summary(step)

    @admin.display(description="step")
    def step_label(self, step: AutomationStep) -> str:
        return "new" if step._state.adding else f"step {step.step_index}"

    @admin.display(description="template")
    def email_template(self, step: AutomationStep) -> str:
        """The email step's template (AUT-31 enrichment)."""
        if step.step_type != StepType.EMAIL:
            return "—"
        from templates.models import EmailTemplate

        template_id = (step.config or {}).get("emailTemplateId")
        tpl = (
            EmailTemplate.objects.filter(pk=template_id, organization_id=step.organization_id).first()
            if template_id
            else None
        )
        if tpl is None:
            return "missing template"
        try:
            return format_html(
                '<a href="{}">{}</a>',
                reverse("admin:templates_emailtemplate_change", args=[tpl.pk]),
                tpl.name,
            )
        except NoReverseMatch:
            return tpl.name


# --- the automation editor ---------------------------------------------------------------------------------------


@admin.register(Automation)
class AutomationAdmin(TenantModelAdmin):
    form = AutomationForm
    inlines = [StepInline]
    manage_permission = "automations:manage"
    feature_flag = "automations"
    change_form_template = "admin/automations/automation/change_form.html"
    list_display = (
        "name",
        "status",
        "trigger_type",
        "step_count",
        "stats_entered",
        "active_runs",
        "stats_completed",
        "stats_cancelled",
        "consecutive_run_failures",
        "updated_at",
    )
    list_filter = (StatusCountFilter, "trigger_type")
    search_fields = ("name",)
    readonly_fields = (
        "status",
        "activated_at",
        "paused_at",
        "counters",
        "consecutive_run_failures",
        "runs_link",
        "step_funnel",
        "flow",
    )
    fieldsets = (
        (None, {"fields": ("name", "description", "status", "activated_at", "paused_at")}),
        ("Trigger", {"fields": ("trigger_type", "trigger_settings")}),
        ("Flow", {"fields": ("flow",)}),
        ("Email", {"fields": ("unsubscribe_footer", "track_engagement")}),
        ("Statistics", {"fields": ("counters", "consecutive_run_failures", "runs_link", "step_funnel")}),
    )
    actions = ["duplicate_automations"]

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(_step_count=Count("steps", distinct=True))

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):
        from automations.counters import counters_rollup

        counters_rollup()  # the list sorts by the counter columns: fold the pending deltas first (item 2)
        return super().changelist_view(request, extra_context)

    def get_readonly_fields(self, request: HttpRequest, obj: Automation | None = None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.status != AutomationStatus.DRAFT:
            fields += ["trigger_type"]  # AUT-02: trigger edits only in draft
        return fields

    def get_fieldsets(self, request: HttpRequest, obj: Automation | None = None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None and obj.status != AutomationStatus.DRAFT:  # no settings form outside draft
            fieldsets = [
                (name, {**opts, "fields": [f for f in opts["fields"] if f != "trigger_settings"]})
                for name, opts in fieldsets
            ]
        return fieldsets

    @admin.display(description="flow")
    def flow(self, obj: Automation) -> str:
        """The picture of the steps and branches, and a warning per branch that runs into another's mail."""
        if not obj.pk:
            return "Save to see the flow of the steps."
        from automations.flow import fall_throughs, flow_of
        from automations.flow_svg import flow_svg

        steps = flow_of(obj)
        rows = {s.step_index: s for s in obj.steps.all()}
        labels = {i: step_summary(rows[i]) for i in rows}
        warnings = format_html_join(
            "", '<li class="warning">{}</li>', ((w.message,) for w in fall_throughs(steps))
        )
        listing = (
            format_html('<ul class="messagelist" id="flow-warnings">{}</ul>', warnings) if warnings else ""
        )
        return format_html("{}{}", listing, flow_svg(steps, labels))

    @admin.display(description="steps", ordering="_step_count")
    def step_count(self, obj: Automation) -> int:
        return getattr(obj, "_step_count", 0)

    @admin.display(description="active")
    def active_runs(self, obj: Automation) -> int:
        return obj.stats_active

    @admin.display(description="counters")
    def counters(self, obj: Automation) -> str:
        from automations.counters import counters_overlay

        obj = copy.copy(obj)  # never saved with the overlay
        counters_overlay([obj])
        return (
            f"entered {obj.stats_entered} · active {obj.stats_active} · completed {obj.stats_completed} · "
            f"cancelled {obj.stats_cancelled}"
        )

    @admin.display(description="runs")
    def runs_link(self, obj: Automation) -> str:
        if not obj.pk:
            return "—"
        url = reverse("admin:automations_automationrun_changelist") + f"?automation__id__exact={obj.pk}"
        return format_html('<a href="{}">Browse runs</a>', url)

    @admin.display(description="step funnel")
    def step_funnel(self, obj: Automation) -> str:
        if not obj.pk:
            return "—"
        rows = services.automation_funnel(obj)
        if not rows:
            return "no steps"
        # Padded cells, numbers right-aligned, the table as wide as its content: readable at 1,400 px.
        cell = "padding:4px 12px;white-space:nowrap;border-bottom:1px solid rgba(127,127,127,.2)"
        num = cell + ";text-align:right;font-variant-numeric:tabular-nums"
        names = ("pending", "executing", "completed", "failed", "skipped")
        header = format_html(
            '<tr><th style="{}">Step</th><th style="{}">Type</th>{}</tr>',
            cell,
            cell,
            format_html_join("", '<th style="{}">{}</th>', ((num, n.capitalize()) for n in names)),
        )
        body = format_html_join(
            "",
            '<tr><td style="{}">{}</td><td style="{}">{}</td>{}</tr>',
            (
                (
                    num,
                    r["stepIndex"],
                    cell,
                    str(r["stepType"]).replace("_", " ").capitalize(),
                    format_html_join("", '<td style="{}">{}</td>', ((num, r[n]) for n in names)),
                )
                for r in rows
            ),
        )
        return format_html(
            '<table id="step-funnel" style="width:auto;border-collapse:collapse">{}{}</table>', header, body
        )

    # -- saving: the automation row through its services, steps through the structural services ---------------
    def save_model(self, request: HttpRequest, obj: Automation, form: Any, change: bool) -> None:
        org = obj.organization_id or get_tenancy(request).organization_id
        if org is None:
            raise PermissionDenied("Choose an organization first.")
        if not change:
            created = services.automation_create(
                organization_id=org,
                actor=self.actor(request),
                name=form.cleaned_data["name"],
                description=form.cleaned_data.get("description"),
                trigger_type=form.cleaned_data["trigger_type"],
                trigger_config=form.cleaned_data.get("trigger_config"),
            )
            obj.pk = created.pk
            obj.refresh_from_db()
            return
        changes: dict[str, Any] = {
            "name": form.cleaned_data["name"],
            "description": form.cleaned_data.get("description"),
        }
        if "trigger_type" in form.cleaned_data:
            changes["trigger_type"] = form.cleaned_data["trigger_type"]
            changes["trigger_config"] = form.cleaned_data.get("trigger_config")
        try:
            services.automation_update(automation_id=obj.pk, organization_id=obj.organization_id, **changes)
        except (services.AutomationRefused, services.AutomationInvalid) as exc:
            messages.error(request, exc.message)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not AutomationStep:
            return super().save_formset(request, form, formset, change)
        automation: Automation = form.instance
        org = automation.organization_id
        # The rows are written by the services below, not by formset.save(); the change message reads these.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        try:
            self._save_steps(automation, org, formset)
        except (services.AutomationRefused, services.AutomationInvalid) as exc:
            messages.error(request, exc.message)
        return None

    def _save_steps(self, automation: Automation, org: Any, formset: Any) -> None:
        kept, deleted, added, moves = [], [], [], []
        for f in formset.forms:
            if not hasattr(f, "cleaned_data") or not f.cleaned_data:
                continue
            if not f.instance._state.adding:
                if f.cleaned_data.get("DELETE"):
                    deleted.append(f.instance.pk)
                    continue
                kept.append(f.instance)
                if {"step_type", "config", "yes_branch", "no_branch"} & set(f.changed_data):
                    services.step_update(
                        automation_id=automation.pk,
                        organization_id=org,
                        step_id=f.instance.pk,
                        step_type=f.cleaned_data["step_type"],
                        config=f.cleaned_data["config"],
                    )
                position = f.cleaned_data.get("position")
                moves.append(
                    (
                        position if position is not None else f.instance.step_index,
                        f.instance.step_index,
                        f.instance.pk,
                    )
                )
            else:
                added.append((f.cleaned_data["step_type"], f.cleaned_data["config"]))
        order = [pk for _, _, pk in sorted(moves, key=lambda m: (m[0], m[0] == m[1], m[1]))]
        current = list(
            AutomationStep.objects.filter(automation=automation)
            .order_by("step_index")
            .values_list("pk", flat=True)
        )
        if order != current and len(order) == len(current):
            services.steps_reorder(
                automation_id=automation.pk, organization_id=org, step_ids=[str(pk) for pk in order]
            )
        for pk in deleted:
            services.step_remove(automation_id=automation.pk, organization_id=org, step_id=pk)
        created = [
            (services.step_add(automation_id=automation.pk, organization_id=org, step_type=t, config=c), c)
            for t, c in added
        ]
        # Appending shifts targets past the end by one; the new rows' targets name places in the final list.
        for step, config in created:
            if step.step_type == StepType.CONDITION:
                services.step_update(
                    automation_id=automation.pk, organization_id=org, step_id=step.pk, config=config
                )

    # -- actions --------------------------------------------------------------------------------------------------
    def has_manage_permission(self, request: HttpRequest) -> bool:
        """`automations:manage` (DOM-02): owners, admins and platform staff; the duplicate action asks for it."""
        return self._may(request, self.manage_permission)

    @admin.action(description="Duplicate selected automations as drafts", permissions=["manage"])
    def duplicate_automations(self, request: HttpRequest, queryset: Any) -> None:
        if not get_tenancy(request).allows("automations:manage"):
            raise PermissionDenied
        for automation in queryset:
            copy = services.automation_duplicate(
                automation_id=automation.pk,
                organization_id=automation.organization_id,
                actor=self.actor(request),
            )
            messages.success(request, f'Created "{copy.name}".')

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        """The bulk delete action goes through the service too: active automations are refused."""
        for automation in queryset:
            try:
                services.automation_delete(
                    automation_id=automation.pk,
                    organization_id=automation.organization_id,
                    actor=self.actor(request),
                )
            except services.AutomationRefused as exc:
                messages.error(request, f'"{automation.name}": {exc.message}')

    def delete_model(self, request: HttpRequest, obj: Automation) -> None:
        services.automation_delete(
            automation_id=obj.pk, organization_id=obj.organization_id, actor=self.actor(request)
        )

    def has_delete_permission(self, request: HttpRequest, obj: Automation | None = None) -> bool:
        if obj is not None and obj.status == AutomationStatus.ACTIVE:
            return False  # "Cannot delete active automations. Please pause first."
        return super().has_delete_permission(request, obj)

    # -- lifecycle buttons ----------------------------------------------------------------------------------------
    def get_urls(self):
        return [
            path(
                "template-autocomplete/",
                self.admin_site.admin_view(template_autocomplete_view),
                name="automations_automation_template_autocomplete",
            ),
            path(
                "<uuid:object_id>/simulate/",
                self.admin_site.admin_view(
                    lambda request, object_id: simulate_view(self, request, object_id)
                ),
                name="automations_automation_simulate",
            ),
            path(
                "<uuid:object_id>/transition/<str:verb>/",
                self.admin_site.admin_view(self.transition_view),
                name="automations_automation_transition",
            ),
            *super().get_urls(),
        ]

    def transition_view(self, request: HttpRequest, object_id: Any, verb: str):
        """A lifecycle button; Activate, Pause and Resume show their confirmation page (GET, or a POST not
        from that page) and act only on that page's POST (`post=yes`, as Django's own confirmation pages)."""
        if request.method != "POST" and verb not in CONFIRMED_VERBS:
            return HttpResponseNotAllowed(["POST"])
        automation = get_object_or_404(self.get_queryset(request), pk=object_id)
        if verb not in PUBLIC_ACTIONS or not self.has_view_permission(request, automation):
            raise PermissionDenied
        if verb in CONFIRMED_VERBS and (request.method != "POST" or request.POST.get("post") != "yes"):
            if not self.has_change_permission(request, automation):
                raise PermissionDenied
            return confirmation_page(
                self,
                request,
                automation,
                automation_confirmation(automation, verb),
                action_url=reverse("admin:automations_automation_transition", args=[automation.pk, verb]),
                back_url=reverse("admin:automations_automation_change", args=[automation.pk]),
            )
        tenancy = get_tenancy(request)
        outcome = PUBLIC_ACTIONS[verb](
            automation_id=automation.pk,
            organization_id=automation.organization_id,
            actor=self.actor(request),
            authority=(
                Authority.platform_staff() if tenancy.is_platform_staff else Authority.member(tenancy.role)
            ),
        )
        if outcome.ok:
            note = " (already in that state)" if outcome.applied == "recorded" else ""
            messages.success(request, f"Automation is now {outcome.to_state}{note}.")
        else:
            messages.error(request, outcome.message or outcome.reason)
        return HttpResponseRedirect(reverse("admin:automations_automation_change", args=[automation.pk]))

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["lifecycle_buttons"] = [
                (reverse("admin:automations_automation_transition", args=[obj.pk, verb]), label, verb)
                for verb, label in LIFECYCLE_BUTTONS.get(obj.status, [])
            ]
            context["confirmed_verbs"] = CONFIRMED_VERBS
            context["simulate_url"] = reverse("admin:automations_automation_simulate", args=[obj.pk])
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )
