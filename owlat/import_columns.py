"""The columns of a CSV import as the admin's mapping step shows them: the header and first records of a file,
what each column is read as by default, and the operator's mapping checked (one contact field or custom
property per column, or the column ignored). `owlat.imports.contact_import_validate` reads the file with it."""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable

from owlat.imports import (
    _PROPERTY_KEY_RE,
    KNOWN_COLUMNS,
    MAX_PROPERTY_KEY_LENGTH,
    ImportFileError,
    _normalize_header,
    _records,
)

#: the contact fields a column can be mapped to, in the order the mapping form offers them
FIELD_TARGETS: dict[str, str] = {
    "email": "Email address",
    "first_name": "First name",
    "last_name": "Last name",
    "language": "Language",
    "timezone": "Time zone",
}


def suggested_mapping(header: list[str]) -> list[str]:
    """What each column is read as when the operator changes nothing: a known contact field by its header
    (`first_name`, `First Name`, `firstName`), else a custom property of the header's name, else "" (ignored:
    a header that is no valid property key)."""
    out = []
    for raw in header:
        name = (raw or "").strip()
        target = KNOWN_COLUMNS.get(_normalize_header(name))
        valid_key = bool(name) and len(name) <= MAX_PROPERTY_KEY_LENGTH and bool(_PROPERTY_KEY_RE.match(name))
        out.append(target or (name if valid_key else ""))
    return out


def map_targets(header: list[str], mapping: list[str]) -> tuple[dict[int, str], dict[int, str]]:
    """The operator's mapping (one target per column: a contact field, a custom property key, or "" to ignore
    the column) as ({column index: contact field}, {column index: property key}). Raises ImportFileError."""
    from owlat.limits import CONTACT_PROPERTIES

    if len(mapping) != len(header):
        raise ImportFileError("The column mapping does not match the file's columns: upload the file again.")
    fields: dict[int, str] = {}
    properties: dict[int, str] = {}
    seen: dict[str, str] = {}
    for index, target in enumerate(mapping):
        target = (target or "").strip()
        if not target:
            continue
        column = (header[index] or "").strip() or f"column {index + 1}"
        if target in seen:
            raise ImportFileError(f"“{column}” and “{seen[target]}” are both read as {target}: choose one.")
        seen[target] = column
        if target in FIELD_TARGETS:
            fields[index] = target
        elif len(target) > MAX_PROPERTY_KEY_LENGTH or not _PROPERTY_KEY_RE.match(target):
            raise ImportFileError(
                f"“{target[:40]}” is not a valid custom property key (letters, digits, '_', '-' and '.')."
            )
        else:
            properties[index] = target
    if "email" not in fields.values():
        raise ImportFileError("Choose the column that holds the email address.")
    if len(properties) > CONTACT_PROPERTIES.max_keys:
        raise ImportFileError(
            f"{len(properties)} columns are read as custom properties; a contact can have at most "
            f"{CONTACT_PROPERTIES.max_keys} (CONTACT_PROPERTIES_MAX_KEYS)."
        )
    return fields, properties


#: columns beyond the contact fields and the custom properties a contact may have, left out of an import
MAX_IGNORED_COLUMNS = 50


def preview_records(
    text: Iterable[str], *, rows: int = 5, max_rows: int | None = None
) -> tuple[list[str], list[list[str]]]:
    """The header and the first `rows` records, for the mapping form. Raises ImportFileError, also when the file
    has more than `max_rows` records (so an over-long file is refused at its upload, before the mapping)."""
    from owlat.limits import CONTACT_PROPERTIES

    records = _records(text)
    try:
        first = next(records, None)
        if first is None:
            raise ImportFileError("The file is empty.")
        header = first[1]
        most = CONTACT_PROPERTIES.max_keys + len(FIELD_TARGETS) + MAX_IGNORED_COLUMNS
        if len(header) > most:
            raise ImportFileError(f"The file has {len(header)} columns; an import reads at most {most}.")
        if any("\x00" in name for name in header):
            raise ImportFileError("The header contains a NUL byte.")
        sample = [values for _line, values in itertools.islice(records, rows)]
        if max_rows is not None and len(sample) + sum(1 for _ in records) > max_rows:
            raise ImportFileError(
                f"The file has more than {max_rows} rows (IMPORT_MAX_ROWS): split it into smaller files, or ask "
                "the installation's operator to run manage.py import_contacts."
            )
    except csv.Error as exc:
        raise ImportFileError(f"The file is not valid CSV: {exc}") from None
    return header, sample
