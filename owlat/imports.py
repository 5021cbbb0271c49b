"""Bulk contact import from CSV (DOM-06, AUT-16).

Two passes: `contact_import_validate` reads and checks EVERY row first (email format, lengths, time zone,
language) and returns the good rows plus the bad rows with their line numbers; `contact_import_run` then imports
the good rows in batches, each batch in its own transaction, through the single find-or-create primitive with
`fire=False` (a bulk import does not fire `contact_created`); merges that change built-in fields fire
`contact_updated` (through `contact_update`). One audit row `contact.imported` per import.

Columns: `email` (required), `first_name`/`firstName`, `last_name`/`lastName`, `language`, `timezone`; any other
column becomes a custom property (DOM-07). Modes: `upsert` keeps existing contacts as they are, `merge` fills
their empty fields and sets the custom properties given.
"""

from __future__ import annotations

import csv
import io
import re
import zoneinfo
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from django.db import transaction

from owlat.models import Contact, ContactSource, Organization, Topic

Mode = Literal["upsert", "merge"]
MODES: tuple[str, ...] = ("upsert", "merge")
DEFAULT_BATCH_SIZE = 1000
IMPORT_ACTOR = "system:import"

MAX_EMAIL_LENGTH = 254
MAX_NAME_LENGTH = 200
MAX_LANGUAGE_LENGTH = 16
MAX_TIMEZONE_LENGTH = 64
MAX_PROPERTY_KEY_LENGTH = 100

# header (lower-cased, without "_", "-" and spaces) → contact field
KNOWN_COLUMNS = {
    "email": "email",
    "firstname": "first_name",
    "lastname": "last_name",
    "language": "language",
    "timezone": "timezone",
}
#: Deliberately looser than the API's language rule (`xx` or `xx-yy`): lists exported from other tools carry
#: BCP 47-like tags (`pt_BR`, `zh-Hant-TW`, three-letter codes) and an import should keep them, not drop the row.
IMPORT_LANGUAGE_RE = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$")
_PROPERTY_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
BUILTIN_FIELDS = ("first_name", "last_name", "language", "timezone")


class ImportFileError(ValueError):
    """The file as a whole cannot be imported (unreadable, no email column, bad header)."""


@dataclass(frozen=True)
class RowError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class ImportRow:
    line: int
    email: str
    fields: dict[str, str]  # first_name, last_name, language, timezone (only non-empty ones)
    properties: dict[str, str]  # non-empty custom property values


@dataclass
class Validation:
    rows: list[ImportRow] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    duplicates: list[RowError] = field(default_factory=list)  # valid rows repeating an earlier email
    property_columns: list[str] = field(default_factory=list)
    total: int = 0


@dataclass
class ImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    errors: int = 0
    subscribed: int = 0
    dry_run: bool = False

    def as_dict(self) -> dict[str, int]:
        return {
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "errors": self.errors,
        }

    def __str__(self) -> str:
        prefix = "Dry run — nothing was written. Would have: " if self.dry_run else ""
        text = ", ".join(f"{k} {v}" for k, v in self.as_dict().items())
        if self.subscribed:
            text += f", subscribed to topic {self.subscribed}"
        return prefix + text


# --- reading and validating ----------------------------------------------------------------------------------


def _normalize_header(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.strip().lower())


def _map_header(header: list[str]) -> tuple[dict[int, str], dict[int, str]]:
    """→ ({column index: contact field}, {column index: property key}). Raises ImportFileError."""
    from owlat.limits import CONTACT_PROPERTIES

    limit = CONTACT_PROPERTIES.max_keys
    too_many = (
        f"The file has {{}} custom property columns; a contact can have at most {limit} "
        "(CONTACT_PROPERTIES_MAX_KEYS)."
    )
    if len(header) > limit + len(KNOWN_COLUMNS):  # before any per-column work
        raise ImportFileError(too_many.format(f"at least {len(header) - len(KNOWN_COLUMNS)}"))
    fields: dict[int, str] = {}
    properties: dict[int, str] = {}
    seen: dict[str, int] = {}
    for index, raw in enumerate(header):
        name = (raw or "").strip()
        if not name:
            raise ImportFileError(f"Column {index + 1} of the header has no name.")
        target = KNOWN_COLUMNS.get(_normalize_header(name))
        key = target or name
        if key in seen:
            raise ImportFileError(f'Column "{name}" appears twice in the header.')
        seen[key] = index
        if target:
            fields[index] = target
        else:
            if len(name) > MAX_PROPERTY_KEY_LENGTH:
                raise ImportFileError(
                    f'Column "{name[:40]}…" is too long for a custom property key '
                    f"(at most {MAX_PROPERTY_KEY_LENGTH} characters)."
                )
            if not _PROPERTY_KEY_RE.match(name):
                raise ImportFileError(
                    f'Column "{name}" is not a valid custom property key '
                    "(letters, digits, '_', '-' and '.' only)."
                )
            properties[index] = name
    if "email" not in fields.values():
        raise ImportFileError('The file has no "email" column.')
    if len(properties) > limit:
        raise ImportFileError(too_many.format(len(properties)))
    return fields, properties


def _is_timezone(name: str) -> bool:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def validate_row(line: int, values: dict[str, str], properties: dict[str, str]) -> ImportRow | RowError:
    """Check one row (already split into contact fields and custom properties)."""
    from owlat.contacts import is_valid_email, normalize_email
    from owlat.limits import CONTACT_PROPERTIES, json_size

    size = json_size(properties) if properties else 0
    if size > CONTACT_PROPERTIES.max_bytes:
        return RowError(
            line, f"custom properties are too large: {size} bytes (at most {CONTACT_PROPERTIES.max_bytes})"
        )
    for name, value in (*values.items(), *properties.items()):
        if "\x00" in value:  # PostgreSQL cannot store it: refuse the row, naming the column
            return RowError(line, f"{name} contains a NUL byte")
    email = values.get("email", "")
    if not email:
        return RowError(line, "Email is required")
    if len(email) > MAX_EMAIL_LENGTH or not is_valid_email(email):
        return RowError(line, f"Invalid email format: {email[:80]}")
    fields: dict[str, str] = {}
    for name in ("first_name", "last_name"):
        value = values.get(name, "")
        if len(value) > MAX_NAME_LENGTH:
            return RowError(line, f"{name} must be at most {MAX_NAME_LENGTH} characters")
        if value:
            fields[name] = value
    language = values.get("language", "")
    if language:
        if len(language) > MAX_LANGUAGE_LENGTH or not IMPORT_LANGUAGE_RE.match(language):
            return RowError(line, f"Invalid language: {language[:40]} (use a code such as de or en-GB)")
        fields["language"] = language
    tz = values.get("timezone", "")
    if tz:
        if len(tz) > MAX_TIMEZONE_LENGTH or not _is_timezone(tz):
            return RowError(line, f"Invalid timezone: {tz[:64]} (use an IANA name such as Europe/Berlin)")
        fields["timezone"] = tz
    return ImportRow(line=line, email=normalize_email(email), fields=fields, properties=properties)


def _records(text: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """(first physical line of the record, values) for each CSV record; blank lines are skipped."""
    reader = csv.reader(text)
    previous_end = 0
    for values in reader:
        start = previous_end + 1
        previous_end = reader.line_num
        if not values or all(not v.strip() for v in values):
            continue
        yield start, values


def contact_import_validate(
    text: Iterable[str], *, max_rows: int | None = None, mapping: list[str] | None = None
) -> Validation:
    """Read every record and validate it. Raises ImportFileError when the file as a whole is unusable, or has
    more than `max_rows` records after the header (None: no limit) — raised on the first record over the
    limit, before anything is imported. `mapping` (one target per column, "" to ignore it; see
    `owlat.import_columns.map_targets`) replaces what the header names."""
    records = _records(text)
    try:
        first = next(records, None)
        if first is None:
            raise ImportFileError("The file is empty.")
        _, header = first
        if any("\x00" in name for name in header):
            raise ImportFileError("The header contains a NUL byte.")
        if mapping is None:
            field_columns, property_columns = _map_header(header)
        else:
            from owlat.import_columns import map_targets

            field_columns, property_columns = map_targets(header, mapping)
        result = Validation(property_columns=list(property_columns.values()))
        seen_emails: dict[str, int] = {}
        for line, values in records:
            result.total += 1
            if max_rows is not None and result.total > max_rows:
                raise ImportFileError(
                    f"The file has more than {max_rows} rows (IMPORT_MAX_ROWS): split it into smaller "
                    "files, or ask the installation's operator to run manage.py import_contacts."
                )
            if len(values) > len(header):
                result.errors.append(
                    RowError(line, f"has {len(values)} values but the header has {len(header)} columns")
                )
                continue
            row_fields = {
                name: values[i].strip() if i < len(values) else "" for i, name in field_columns.items()
            }
            row_properties = {
                key: values[i].strip()
                for i, key in property_columns.items()
                if i < len(values) and values[i].strip()
            }
            checked = validate_row(line, row_fields, row_properties)
            if isinstance(checked, RowError):
                result.errors.append(checked)
                continue
            if checked.email in seen_emails:
                result.duplicates.append(
                    RowError(line, f"{checked.email} already appears on line {seen_emails[checked.email]}")
                )
                continue
            seen_emails[checked.email] = line
            result.rows.append(checked)
    except csv.Error as exc:
        raise ImportFileError(f"The file is not valid CSV: {exc}")
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"The file is not UTF-8 text: {exc}")
    return result


def open_csv(path: str | Path) -> io.TextIOWrapper:
    """Open a CSV file as UTF-8 (a leading byte-order mark is ignored). Raises ImportFileError."""
    try:
        return open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise ImportFileError(f"Cannot read {path}: {exc.strerror or exc}")


# --- importing -------------------------------------------------------------------------------------------------


def resolve_organization(value: str) -> Organization:
    """An organization by id or by exact name. Raises Organization.DoesNotExist / ValueError (ambiguous)."""
    import uuid

    text = (value or "").strip()
    try:
        return Organization.objects.get(pk=uuid.UUID(text))
    except (ValueError, Organization.DoesNotExist):
        pass
    matches = list(Organization.objects.filter(name=text)[:2])
    if not matches:
        matches = list(Organization.objects.filter(name__iexact=text)[:2])
    if len(matches) > 1:
        raise ValueError(f'More than one organization is named "{text}"; pass its id instead.')
    if not matches:
        raise Organization.DoesNotExist(f'No organization "{text}" (give its id or exact name).')
    return matches[0]


def resolve_topic(organization: Organization, value: str) -> Topic:
    """A topic of `organization` by id (or exact name). Raises Topic.DoesNotExist."""
    import uuid

    text = (value or "").strip()
    qs = Topic.objects.filter(organization=organization)
    try:
        return qs.get(pk=uuid.UUID(text))
    except (ValueError, Topic.DoesNotExist):
        pass
    topic = qs.filter(name=text).first()
    if topic is None:
        raise Topic.DoesNotExist(f'No topic "{text}" in organization "{organization.name}".')
    return topic


def _snapshot(contact: Contact) -> tuple[Any, ...]:
    from owlat.contacts import contact_property_values

    return (
        *(getattr(contact, f) for f in BUILTIN_FIELDS),
        tuple(sorted(contact_property_values(contact).items())),
    )


def _import_row(
    row: ImportRow,
    *,
    organization_id: Any,
    mode: Mode,
    actor: str,
    topic: Topic | None,
    skip_doi: bool,
    summary: ImportSummary,
    file_name: str = "",
) -> None:
    from owlat.activities import activity_record
    from owlat.contacts import contact_find_or_create, live_contacts

    before = None
    existing = live_contacts(organization_id).filter(email=row.email).first()
    if existing is not None and mode == "merge":
        before = _snapshot(existing)
    contact, created = contact_find_or_create(
        organization_id=organization_id,
        email=row.email,
        source=ContactSource.IMPORT,
        actor=actor,
        mode=mode,
        properties=row.properties or None,
        fire=False,
        **row.fields,
    )
    if created:
        summary.created += 1
        outcome = "created"
    elif before is not None and _snapshot(contact) != before:
        summary.updated += 1
        outcome = "updated"
    else:
        summary.unchanged += 1
        outcome = "unchanged"
    activity_record(  # the contact's timeline says which import touched it and how
        organization_id=organization_id,
        contact_id=contact.pk,
        activity_type="imported",
        metadata={"fileName": file_name[:200], "outcome": outcome, "mode": mode},
    )
    if topic is not None:
        from owlat.topics import ALREADY_MEMBER, topic_subscribe

        outcome = topic_subscribe(
            contact=contact, topic=topic, source="import", actor=actor, skip_doi=skip_doi
        )
        if outcome != ALREADY_MEMBER:
            summary.subscribed += 1


def contact_import_run(
    *,
    organization_id: Any,
    validation: Validation,
    mode: Mode = "upsert",
    topic: Topic | None = None,
    skip_doi: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    actor: str = IMPORT_ACTOR,
    file_name: str = "",
    progress: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import the validated rows in batches (one transaction per batch); audit `contact.imported` once.

    A batch that fails rolls back as a whole and stops the import (the exception propagates; batches before
    it stay committed, and re-running the same file is safe: existing contacts are found, not duplicated).
    With `dry_run`, everything runs inside one transaction that is rolled back: the summary is exact and
    nothing is written, enqueued or sent.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    if topic is not None and str(topic.organization_id) != str(organization_id):
        raise ValueError("the topic belongs to another organization")
    plan = _ImportPlan(organization_id, mode, topic, skip_doi, batch_size, actor, file_name)
    summary = ImportSummary(
        errors=len(validation.errors), skipped=len(validation.duplicates), dry_run=dry_run
    )
    if dry_run:
        with transaction.atomic():
            _run_batches(plan, validation.rows, summary, progress)
            _audit_import(plan, summary, completed=True)
            transaction.set_rollback(True)
        return summary
    completed = False
    try:
        _run_batches(plan, validation.rows, summary, progress)
        completed = True
    finally:
        # Once per import, also when a batch failed: it records what did land.
        with transaction.atomic():
            _audit_import(plan, summary, completed=completed)
    return summary


@dataclass(frozen=True)
class _ImportPlan:
    organization_id: Any
    mode: Mode
    topic: Topic | None
    skip_doi: bool
    batch_size: int
    actor: str
    file_name: str


def _run_batches(
    plan: _ImportPlan, rows: list[Any], summary: ImportSummary, progress: Callable[[int], None] | None
) -> None:
    """The rows in batches, one transaction each; only a committed batch counts in `summary`."""
    for start in range(0, len(rows), plan.batch_size):
        batch = rows[start : start + plan.batch_size]
        counts = ImportSummary()
        with transaction.atomic():
            for row in batch:
                _import_row(
                    row,
                    organization_id=plan.organization_id,
                    mode=plan.mode,
                    actor=plan.actor,
                    topic=plan.topic,
                    skip_doi=plan.skip_doi,
                    summary=counts,
                    file_name=plan.file_name,
                )
        summary.created += counts.created
        summary.updated += counts.updated
        summary.unchanged += counts.unchanged
        summary.subscribed += counts.subscribed
        if progress is not None:
            progress(len(batch))


def _audit_import(plan: _ImportPlan, summary: ImportSummary, *, completed: bool) -> None:
    from owlat.audit import audit_write

    audit_write(
        organization_id=plan.organization_id,
        actor=plan.actor,
        action="contact.imported",
        resource="contact",
        details={
            **summary.as_dict(),
            "mode": plan.mode,
            "file": plan.file_name,
            "topicId": str(plan.topic.pk) if plan.topic else None,
            "subscribed": summary.subscribed,
            "completed": completed,
        },
    )
