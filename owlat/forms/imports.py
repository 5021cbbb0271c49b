"""CSV import in the admin (DOM-06 bulk intake through `owlat.imports`): upload, see the first rows and choose
what each column is read as, validate every row, import the good ones, and list each bad row with its line
number and what is wrong."""

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
from owlat.import_columns import preview_records
from owlat.import_pending import pending_forget, pending_load, pending_store
from owlat.imports import MODES, ImportFileError, contact_import_run, contact_import_validate
from owlat.models import ContactProperty

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
    """Step 1: the file."""

    file = forms.FileField(
        label="CSV file",
        help_text="UTF-8 with a header row. The next page shows its first rows and lets you choose what each "
        "column is read as.",
        error_messages={"required": "Choose the CSV file to import."},
    )

    def __init__(self, *args: Any, organization_id: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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


class ImportMappingForm(forms.Form):
    """Step 2: what each column is read as (`column_<i>`), how existing contacts are treated, the topic."""

    pending = forms.CharField(widget=forms.HiddenInput, max_length=500)
    mode = forms.ChoiceField(label="Existing contacts", choices=[(m, MODE_LABELS[m]) for m in MODES])
    topic = forms.ModelChoiceField(
        label="Subscribe to topic (optional)", queryset=None, required=False, empty_label="— no topic —"
    )
    skip_doi = forms.BooleanField(
        label="Consent is attested (no double opt-in mail)", required=False, help_text="Only with a topic."
    )

    def __init__(self, *args: Any, organization_id: Any, header: list[str], **kwargs: Any) -> None:
        from owlat.import_columns import suggested_mapping

        super().__init__(*args, **kwargs)
        self.fields["topic"].queryset = topic_queryset(organization_id)
        known = list(
            ContactProperty.objects.filter(organization_id=organization_id)
            .order_by("key")
            .values_list("key", "label")
        )
        for index, (name, suggested) in enumerate(zip(header, suggested_mapping(header), strict=True)):
            self.fields[f"column_{index}"] = forms.ChoiceField(
                label=name or f"Column {index + 1}",
                choices=_column_choices(name, known),
                initial=suggested,
                required=False,
            )
        styled(self)

    def column_fields(self) -> list[Any]:
        return [self[name] for name in self.fields if name.startswith("column_")]

    def mapping(self) -> list[str]:
        return [self.cleaned_data.get(name) or "" for name in self.fields if name.startswith("column_")]


def _column_choices(name: str, known: list[tuple[str, str]]) -> list[tuple[str, Any]]:
    from owlat.import_columns import FIELD_TARGETS, suggested_mapping

    properties = [(key, f"{label or key} ({key})") for key, label in known]
    own = suggested_mapping([name])[0]
    if own and own not in FIELD_TARGETS and own not in {key for key, _ in known}:
        properties.append((own, f"{own} (a new custom property)"))
    choices: list[tuple[str, Any]] = [
        ("", "— ignore this column —"),
        ("Contact fields", list(FIELD_TARGETS.items())),
    ]
    if properties:
        choices.append(("Custom properties", properties))
    return choices


def contact_import_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """GET: the upload form; POST of a file: its first rows and the column mapping; POST of the mapping:
    validate and import, then show the summary and every rejected row."""
    tenancy = get_tenancy(request)
    org = tenancy.organization
    if org is None:
        raise PermissionDenied("Choose an organization first.")
    if not tenancy.allows("imports:manage"):
        raise PermissionDenied("Only owners and admins can import contacts.")
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": "Import contacts from CSV",
        "opts": model_admin.model._meta,
        "organization": org,
        "upload_refused": "",
    }
    if request.method == "POST" and "pending" in request.POST:
        return _mapping_step(model_admin, request, org, context)
    # refused by its declared length before the upload is used (owlat.uploads stops reading it past the limit)
    limit = settings.IMPORT_MAX_BYTES + FORM_OVERHEAD_BYTES
    if request.method == "POST" and declared_length(request) > limit:
        context.update(form=ContactImportForm(organization_id=org.pk), upload_refused=too_large_message())
        return TemplateResponse(request, "admin/owlat/contact/import.html", context)
    form = ContactImportForm(request.POST or None, request.FILES or None, organization_id=org.pk)
    context["form"] = form
    if request.method == "POST" and form.is_valid():
        lines = form.cleaned_data["file"]
        try:
            header, sample = preview_records(lines, max_rows=settings.IMPORT_MAX_ROWS)
        except ImportFileError as exc:
            form.add_error("file", str(exc))
        else:
            token = pending_store(org.pk, "".join(lines), getattr(request.FILES.get("file"), "name", ""))
            mapping = ImportMappingForm(initial={"pending": token}, organization_id=org.pk, header=header)
            return _mapping_page(request, context, mapping, header, sample)
    return TemplateResponse(request, "admin/owlat/contact/import.html", context)


def _mapping_page(
    request: HttpRequest, context: dict[str, Any], form: ImportMappingForm, header: list[str], sample: list
) -> HttpResponse:
    width = len(header)
    context.update(
        {
            "mapping_form": form,
            "sample": [[*row[:width], *[""] * (width - len(row))] for row in sample],
        }
    )
    return TemplateResponse(request, "admin/owlat/contact/import_mapping.html", context)


def _mapping_step(model_admin: Any, request: HttpRequest, org: Any, context: dict[str, Any]) -> HttpResponse:
    pending = pending_load(org.pk, request.POST.get("pending", ""))
    if pending is None:
        context["form"] = ContactImportForm(organization_id=org.pk)
        context["upload_refused"] = "The uploaded file has expired or was already imported: upload it again."
        return TemplateResponse(request, "admin/owlat/contact/import.html", context)
    text, file_name = pending
    lines = text.splitlines(keepends=True)
    header, sample = preview_records(lines)
    form = ImportMappingForm(request.POST, organization_id=org.pk, header=header)
    if not form.is_valid():
        return _mapping_page(request, context, form, header, sample)
    try:
        validation = contact_import_validate(lines, max_rows=settings.IMPORT_MAX_ROWS, mapping=form.mapping())
    except ImportFileError as exc:
        form.add_error(None, str(exc))
        return _mapping_page(request, context, form, header, sample)
    summary = contact_import_run(
        organization_id=org.pk,
        validation=validation,
        mode=form.cleaned_data["mode"],
        topic=form.cleaned_data.get("topic"),
        skip_doi=form.cleaned_data.get("skip_doi", False),
        actor=model_admin.actor(request),
        file_name=file_name,
    )
    pending_forget(request.POST["pending"])
    context.update(
        {
            "summary": summary,
            "row_errors": validation.errors[:MAX_ERRORS_SHOWN],
            "more_errors": max(0, len(validation.errors) - MAX_ERRORS_SHOWN),
            "duplicates": validation.duplicates[:MAX_ERRORS_SHOWN],
        }
    )
    return TemplateResponse(request, "admin/owlat/contact/import.html", context)
