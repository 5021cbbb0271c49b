"""Per-automation mail options the automation engine gives the delivery worker, through a
registry filled in `AutomationsConfig.ready()` (style.md, Layering: delivery does not import the engines).

- `footer` (default on): automation mail gets an in-body footer with the unsubscribe link, unless its template
  already uses `{{unsubscribeUrl}}`; off for purely transactional flows (a password reset, a receipt);
- `track` (default off): open pixel and signed click links, the campaign tracking (DLV-20, extended to
  automation mail; docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AutomationMailOptions:
    footer: bool = True
    track: bool = False


DEFAULT_OPTIONS = AutomationMailOptions()
#: `(organization_id, automation_id)` pairs → options per automation id (as a string).
OptionsLookup = Callable[[list[tuple[Any, Any]]], dict[str, AutomationMailOptions]]
_lookup: list[OptionsLookup] = []


def register_automation_mail_options(fn: OptionsLookup) -> OptionsLookup:
    """The automation engine's lookup; registering again replaces it (one engine owns automations)."""
    _lookup[:] = [fn]
    return fn


def automation_mail_options(pairs: Iterable[tuple[Any, Any]]) -> dict[str, AutomationMailOptions]:
    """Options per automation id for the given `(organization_id, automation_id)` pairs, in one lookup;
    automations the engine does not know (or no engine registered) get the defaults."""
    pairs = [(org, aid) for org, aid in pairs if aid]
    found = _lookup[0](pairs) if (_lookup and pairs) else {}
    return {str(aid): found.get(str(aid), DEFAULT_OPTIONS) for _, aid in pairs}
