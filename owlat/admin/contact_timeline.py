"""Sections other apps add below the contact page's timeline (the timeline itself is `owlat.timeline`).

An app adds a section with `register_contact_section(section)`: `section(request, contact) -> ContactSection | None`
(delivery registers the per-contact email history: subject, template, status, opened, clicked).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from owlat.models import Contact
from owlat.timeline import Link

__all__ = ["ContactSection", "Link", "contact_sections", "register_contact_section"]


@dataclass(frozen=True)
class ContactSection:
    """A table on the contact page: `rows` are lists of cells (strings, booleans, or `Link`)."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    empty: str = "Nothing yet."
    anchor: str = ""


ContactSectionSource = Callable[[HttpRequest, Contact], "ContactSection | None"]
_SECTIONS: list[ContactSectionSource] = []


def register_contact_section(source: ContactSectionSource) -> None:
    if source not in _SECTIONS:
        _SECTIONS.append(source)


def contact_sections(request: HttpRequest, contact: Contact) -> list[ContactSection]:
    sections = []
    for source in _SECTIONS:
        section = source(request, contact)
        if section is not None:
            sections.append(section)
    return sections
