"""CSV import in the admin (DOM-06 bulk intake through `owlat.imports`): upload, validate every row, import the
good ones, and list each bad row with its line number and what is wrong."""

from __future__ import annotations

import io
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from owlat.admin_tenancy import get_tenancy
from owlat.forms.conditions import topic_queryset
from owlat.forms.nested import styled
from owlat.imports import MODES, ImportFileError, contact_import_run, contact_import_validate

MAX_ERRORS_SHOWN = 200
MODE_LABELS = {
    "upsert": "add new contacts, leave existing ones as they are",
    "merge": "add new contacts and fill empty fields of existing ones",
}


#: the multipart envelope around the file (boundaries, the other fields) allowed on top of IMPORT_MAX_BYTES
FORM_OVERHEAD_BYTES = 64 * 1024


def too_large_message() -> str:
    limit = settings.IMPORT_MAX_BYTES
    return (
        f"The file is larger than {limit // (1024 * 1024) or 1} MB ({limit} bytes, IMPORT_MAX_BYTES): split it, "
        "or ask the installation's operator to run manage.py import_contacts."
    )


def declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


class ContactImportForm(forms.Form):
    file = forms.FileField(
        label="CSV file",
        help_text="UTF-8 with a header row: email, first_name, last_name, language, timezone, then custom "
        "properties by key.",
        error_messages={"required": "Choose the CSV file to import."},
    )
    mode = forms.ChoiceField(label="Existing contacts", choices=[(m, MODE_LABELS[m]) for m in MODES])
    topic = forms.ModelChoiceField(
        label="Subscribe to topic (optional)", queryset=None, required=False, empty_label="— no topic —"
    )
    skip_doi = forms.BooleanField(
        label="Consent is attested (no double opt-in mail)", required=False, help_text="Only with a topic."
    )

    def __init__(self, *args: Any, organization_id: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["topic"].queryset = topic_queryset(organization_id)
        styled(self)

    def clean_file(self) -> list[str]:
        upload = self.cleaned_data["file"]
        if upload.size > settings.IMPORT_MAX_BYTES:
            raise forms.ValidationError(too_large_message())
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError(
                "The file is not UTF-8 text: save it as “CSV UTF-8” and upload again."
            )
        return io.StringIO(text, newline="").read().splitlines(keepends=True)


def contact_import_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """GET: the upload form; POST: validate and import, then show the summary and every rejected row."""
    tenancy = get_tenancy(request)
    org = tenancy.organization
    if org is None:
        raise PermissionDenied("Choose an organization first.")
    if not tenancy.allows("imports:manage"):
        raise PermissionDenied("Only owners and admins can import contacts.")
    # refused by its declared length before the upload is used (owlat.uploads stops reading it past the limit)
    limit = settings.IMPORT_MAX_BYTES + FORM_OVERHEAD_BYTES
    refused = request.method == "POST" and declared_length(request) > limit
    if refused:
        form = ContactImportForm(organization_id=org.pk)
    else:
        form = ContactImportForm(request.POST or None, request.FILES or None, organization_id=org.pk)
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": "Import contacts from CSV",
        "opts": model_admin.model._meta,
        "form": form,
        "organization": org,
        "upload_refused": too_large_message() if refused else "",
    }
    if request.method == "POST" and form.is_valid():
        try:
            validation = contact_import_validate(form.cleaned_data["file"], max_rows=settings.IMPORT_MAX_ROWS)
        except ImportFileError as exc:
            form.add_error("file", str(exc))
        else:
            summary = contact_import_run(
                organization_id=org.pk,
                validation=validation,
                mode=form.cleaned_data["mode"],
                topic=form.cleaned_data.get("topic"),
                skip_doi=form.cleaned_data.get("skip_doi", False),
                actor=model_admin.actor(request),
                file_name=getattr(request.FILES.get("file"), "name", ""),
            )
            context.update(
                {
                    "summary": summary,
                    "row_errors": validation.errors[:MAX_ERRORS_SHOWN],
                    "more_errors": max(0, len(validation.errors) - MAX_ERRORS_SHOWN),
                    "duplicates": validation.duplicates[:MAX_ERRORS_SHOWN],
                }
            )
    return TemplateResponse(request, "admin/owlat/contact/import.html", context)
