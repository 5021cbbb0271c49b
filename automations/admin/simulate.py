"""The automation editor's "Simulate for a contact" page: pick a contact of the automation's organization by
address and read the walk `automations.simulate` computes — nothing is sent or written."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from automations.simulate import automation_simulate
from owlat.forms.nested import styled


class SimulateForm(forms.Form):
    email = forms.EmailField(
        label="Contact's email address",
        max_length=254,
        help_text="A contact of this organization. The simulation reads their values now and writes nothing.",
    )

    def __init__(self, *args: Any, organization_id: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.organization_id = organization_id
        styled(self)

    def clean_email(self) -> Any:
        from owlat.contacts import normalize_email
        from owlat.models import Contact

        email = normalize_email(self.cleaned_data["email"])
        contact = Contact.objects.filter(organization_id=self.organization_id, email=email).first()
        if contact is None:
            raise forms.ValidationError(
                "No contact of this organization has this address. Check the spelling, or find them under "
                "Audience → Contacts."
            )
        return contact


def simulate_view(model_admin: ModelAdmin, request: HttpRequest, object_id: Any) -> TemplateResponse:
    automation = get_object_or_404(model_admin.get_queryset(request), pk=object_id)
    if not model_admin.has_view_permission(request, automation):
        raise PermissionDenied
    form = SimulateForm(request.GET or None, organization_id=automation.organization_id)
    simulation = None
    if form.is_bound and form.is_valid():
        simulation = automation_simulate(automation=automation, contact=form.cleaned_data["email"])
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Simulate “{automation.name}” for a contact",
        "opts": model_admin.model._meta,
        "original": automation,
        "form": form,
        "simulation": simulation,
    }
    return TemplateResponse(request, "admin/automations/automation/simulate.html", context)
