"""Language and time zone pickers for admin forms: every language Django knows (BCP 47 spelling, `pt-BR`) and
every IANA time zone, as searchable selects (django-unfold's select2 widget), so nobody types a code by heart."""

from __future__ import annotations

import zoneinfo
from functools import cache
from typing import Any

from django import forms
from django.conf import global_settings
from django.utils.translation import get_language_info

from owlat.api.serializers import LANGUAGE_RE


def normalize_language(code: str) -> str:
    """BCP 47 spelling: `pt-br` → `pt-BR` (the API's and contacts' spelling)."""
    base, _, region = (code or "").strip().partition("-")
    return f"{base.lower()}-{region.upper()}" if region else base.lower()


def language_name(code: str) -> str:
    try:
        return get_language_info(code.lower())["name"]
    except KeyError:
        try:
            return get_language_info(code.split("-")[0].lower())["name"] + f" ({code.split('-', 1)[1]})"
        except (KeyError, IndexError):
            return code


LANGUAGES: list[tuple[str, str]] = sorted(
    {
        normalize_language(code): f"{normalize_language(code)} — {name}"
        for code, name in global_settings.LANGUAGES
        if LANGUAGE_RE.match(code)
    }.items(),
    key=lambda item: item[1],
)


def language_choices(extra: list[str]) -> list[tuple[str, str]]:
    """Every known language, plus codes already stored that the list lacks (e.g. `en-US`)."""
    known = {code for code, _ in LANGUAGES}
    added = [(c, f"{c} — {language_name(c)}") for c in dict.fromkeys(extra) if c and c not in known]
    return [*LANGUAGES, *added]


@cache
def _time_zones() -> tuple[str, ...]:
    return tuple(sorted(zoneinfo.available_timezones()))


def select2(choices: list[tuple[str, str]], *, blank: str | None = None) -> forms.Widget:
    from unfold.widgets import UnfoldAdminSelect2Widget

    return UnfoldAdminSelect2Widget(choices=[("", blank), *choices] if blank is not None else choices)


def use_language_picker(field: forms.Field, current: Any, *, blank: str = "—") -> None:
    """Turn a text field holding a language code into a searchable language select (the value stays a string)."""
    field.widget = select2(language_choices([current] if current else []), blank=blank)


def use_time_zone_picker(field: forms.Field, current: Any, *, blank: str = "—") -> None:
    zones = list(_time_zones())
    if current and current not in zones:
        zones.append(current)
    field.widget = select2([(z, z.replace("_", " ")) for z in zones], blank=blank)
