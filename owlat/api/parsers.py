"""Request bodies per API-05: one UTF-8 JSON object whatever the Content-Type, at most 15 MiB.

`JSONObjectParser` is the only parser (`DEFAULT_PARSER_CLASSES`): views read `request.data`. It refuses
anything that is not a JSON object ("Invalid JSON in request body"), including invalid UTF-8 and nesting
too deep to parse; a top-level `null` means the key is absent. `NaN`/`Infinity` parse (Python's `json`
accepts them) and are refused by the field that receives them, naming it (`owlat.api.fields`).
An empty body is refused by `ApiView` for methods that take one (DRF does not call parsers for it).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from django.http.request import RawPostDataException
from rest_framework.parsers import BaseParser

from owlat.api.errors import BODY_TOO_LARGE, INVALID_JSON, ApiError

MAX_BODY_BYTES = 15 * 1024 * 1024
INVALID_CONTENT_LENGTH = "Invalid Content-Length header"


def max_body_bytes() -> int:
    return max(MAX_BODY_BYTES, int(getattr(settings, "DATA_UPLOAD_MAX_MEMORY_SIZE", 0) or 0))


def _too_large() -> ApiError:
    return ApiError("invalid_input", BODY_TOO_LARGE)


def _invalid() -> ApiError:
    return ApiError("invalid_input", INVALID_JSON)


def raw_body(request: HttpRequest) -> bytes:
    """The raw body bytes, refusing more than the 15 MiB limit with "Request body too large"."""
    declared = str(request.META.get("CONTENT_LENGTH") or "0").strip()
    if not declared.isdigit():  # Django would raise ValueError reading the body
        raise ApiError(
            "invalid_input",
            INVALID_CONTENT_LENGTH,
            {"field": "Content-Length", "fields": {"Content-Length": [INVALID_CONTENT_LENGTH]}},
        )
    length = int(declared)
    if length > max_body_bytes():
        raise _too_large()
    try:
        body = request.body
    except RequestDataTooBig:
        raise _too_large()
    except RawPostDataException:
        # Someone consumed the stream as form data; the JSON contract cannot be honoured.
        raise _invalid()
    if len(body) > max_body_bytes():
        raise _too_large()
    return body


def decode_json_object(body: bytes) -> dict[str, Any]:
    """Parse `body` as one JSON object, else "Invalid JSON in request body"."""
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _invalid()
    if not isinstance(value, dict):
        raise _invalid()
    return value


def body_is_blank(request: HttpRequest) -> bool:
    return not raw_body(request).strip()


class JSONObjectParser(BaseParser):
    """Parses every Content-Type as one JSON object (API-05); top-level nulls are dropped."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        if stream is None:
            return {}
        limit = max_body_bytes()
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise _too_large()
        if not body.strip():
            raise _invalid()
        value = decode_json_object(body)
        return {key: item for key, item in value.items() if item is not None}
