"""The admin writes through the kernel services; these helpers make the admin's objects the rows they wrote."""

from __future__ import annotations

from typing import Any


def adopt_written_row(target: Any, source: Any) -> None:
    """Make the admin's in-memory `target` the row a service wrote (`source`), so the admin's redirects,
    messages and log entries refer to it. Writes `__dict__` directly: FSM fields are protected."""
    for f in type(source)._meta.concrete_fields:
        target.__dict__[f.attname] = getattr(source, f.attname)
    target._state.adding = False
    target._state.db = source._state.db


def clear_formset_changes(formset: Any) -> None:
    # The formset's rows were written by services; the admin's change message reads these.
    formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
