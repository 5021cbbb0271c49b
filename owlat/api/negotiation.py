"""Content negotiation of `/api/v1`: JSON in, JSON out, whatever the headers say (API-05)."""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer


class JSONOnlyNegotiation(BaseContentNegotiation):
    """Always answer JSON whatever `Accept` says; parse every body as JSON (API-05)."""

    def select_parser(self, request: Any, parsers: Any) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        renderer = JSONRenderer()
        return renderer, renderer.media_type
