"""The body every FSM transition shares (spec D-04): apply the patch the lifecycle's pure reducer computed, nothing
else. Models import it as their transition body; the lifecycle runner (`owlat.lifecycle`) calls the transition."""

from __future__ import annotations

from typing import Any

from django.db import models


def apply_patch(obj: models.Model, patch: dict[str, Any]) -> None:
    """Set each field of `patch` on `obj` (no save, no side effects)."""
    for key, value in patch.items():
        setattr(obj, key, value)
