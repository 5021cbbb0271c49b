"""The API error envelope (DOM-04, API-08) and the DRF exception handler that produces it for every failure.

Every error leaves the API as `{"error": {"category", "message", "data"?}}` with the DOM-04 category → status
map. Views raise `ApiError(category, message, data=None)`; DRF and Django failures (parse errors, 404, 405,
validation, oversized bodies, anything unhandled) are translated here, so no `{"detail": …}` and no trace
ever reaches a client.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger("owlat.api")

#: DOM-04: category → HTTP status.
CATEGORY_STATUS: dict[str, int] = {
    "invalid_input": 400,
    "unauthenticated": 401,
    "limit_reached": 402,
    "forbidden": 403,
    "not_found": 404,
    "already_exists": 409,
    "conflict": 409,
    "invalid_state": 422,
    "rate_limited": 429,
    "internal": 500,
}

INVALID_JSON = "Invalid JSON in request body"
BODY_TOO_LARGE = "Request body too large"
NOT_FOUND = "Not found"
METHOD_NOT_ALLOWED = "Method not allowed"
INTERNAL = "Internal server error"


class ApiError(Exception):
    """A business or validation failure answered with the error envelope.

    `status` defaults to the category's DOM-04 status; `headers` are added to the response (`Retry-After`).
    """

    def __init__(
        self,
        category: str,
        message: str,
        data: dict[str, Any] | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if category not in CATEGORY_STATUS:
            raise ValueError(f"unknown error category {category!r}")
        super().__init__(message)
        self.category = category
        self.message = message
        self.data = data
        self.status = status or CATEGORY_STATUS[category]
        self.headers = headers or {}

    def response(self) -> Response:
        return api_error_response(self.category, self.message, self.data, self.status, self.headers)


def error_body(category: str | None, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {}
    if category is not None:
        error["category"] = category
    error["message"] = message
    if data is not None:
        error["data"] = data
    return {"error": error}


def api_error_response(
    category: str,
    message: str,
    data: dict[str, Any] | None = None,
    status: int | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """A DRF `Response` carrying the error envelope."""
    return Response(
        error_body(category, message, data), status=status or CATEGORY_STATUS[category], headers=headers
    )


def json_error_response(
    category: str | None, message: str, status: int, data: dict[str, Any] | None = None
) -> JsonResponse:
    """The same envelope as a plain Django response (middleware, outside DRF)."""
    response = JsonResponse(error_body(category, message, data), status=status)
    response.owlat_api = True  # type: ignore[attr-defined]  # marks the envelope for the middleware
    return response


# --- shorthands ------------------------------------------------------------------------------------------


def invalid_input(message: str, *, field: str | None = None, data: dict[str, Any] | None = None) -> ApiError:
    """400 `invalid_input`; with `field`, `data` gets `field` and `fields: {field: [message]}` (API-08)."""
    payload = dict(data or {})
    if field is not None:
        payload.setdefault("field", field)
        payload.setdefault("fields", {field: [message]})
    return ApiError("invalid_input", message, payload or None)


def not_found(message: str = NOT_FOUND, data: dict[str, Any] | None = None) -> ApiError:
    return ApiError("not_found", message, data)


def forbidden(message: str, data: dict[str, Any] | None = None) -> ApiError:
    return ApiError("forbidden", message, data)


def already_exists(message: str, data: dict[str, Any] | None = None) -> ApiError:
    return ApiError("already_exists", message, data)


def conflict(
    message: str, data: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> ApiError:
    return ApiError("conflict", message, data, headers=headers)


def invalid_state(message: str, reason: str, **extra: Any) -> ApiError:
    """422 `invalid_state`; `data.reason` is always present (API-08)."""
    return ApiError("invalid_state", message, {"reason": reason, **extra})


# --- the DRF exception handler ---------------------------------------------------------------------------


def _validation_error_response(detail: Any) -> Response:
    fields: dict[str, list[str]] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                if isinstance(key, int):  # a list's errors keyed by index (ListField, nested many=True)
                    key = f"[{key}]"
                sub_path = str(key) if not path or str(key).startswith("[") else f"{path}.{key}"
                if path and str(key).startswith("["):
                    sub_path = f"{path}{key}"
                if key == "non_field_errors":
                    sub_path = path
                walk(sub, sub_path)
        elif isinstance(value, list) and value and all(not isinstance(v, dict | list) for v in value):
            fields.setdefault(path, []).extend(str(v) for v in value)
        elif isinstance(value, list):
            for index, sub in enumerate(value):
                walk(sub, f"{path}[{index}]")
        else:
            fields.setdefault(path, []).append(str(value))

    walk(detail, "")
    if not fields:
        return api_error_response("invalid_input", "Invalid request")
    first_path, messages = next(iter(fields.items()))
    message = messages[0] if messages else "Invalid request"
    data: dict[str, Any] = {}
    named = {path: msgs for path, msgs in fields.items() if path}
    if first_path:
        data["field"] = first_path
    if named:
        data["fields"] = named
    return api_error_response("invalid_input", message, data or None)


def exception_handler(exc: Exception, context: dict[str, Any] | None = None) -> Response:
    """Turn any exception raised inside an API view into the error envelope (never `None`)."""
    if isinstance(exc, ApiError):
        return exc.response()
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        view = (context or {}).get("view")
        headers = {"Allow": ", ".join(view.allowed_methods)} if view is not None else {}
        return Response(error_body(None, METHOD_NOT_ALLOWED), status=405, headers=headers)
    if isinstance(exc, drf_exceptions.ParseError | drf_exceptions.UnsupportedMediaType):
        return api_error_response("invalid_input", INVALID_JSON)
    if isinstance(exc, RequestDataTooBig):
        return api_error_response("invalid_input", BODY_TOO_LARGE)
    if isinstance(exc, drf_exceptions.ValidationError):
        return _validation_error_response(exc.detail)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        return _validation_error_response(detail)
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        auth_header = getattr(exc, "auth_header", None)
        auth_headers = {"WWW-Authenticate": auth_header} if auth_header else None
        return api_error_response("unauthenticated", str(exc.detail), headers=auth_headers)
    if isinstance(exc, drf_exceptions.Throttled):
        wait = max(1, int(getattr(exc, "wait", None) or 1))
        return api_error_response(
            "rate_limited", str(exc.detail), {"retryAfter": wait}, headers={"Retry-After": str(wait)}
        )
    if isinstance(exc, drf_exceptions.PermissionDenied | DjangoPermissionDenied):
        message = str(getattr(exc, "detail", "") or exc) or "Forbidden"
        return api_error_response("forbidden", message)
    if isinstance(exc, drf_exceptions.NotFound | Http404):
        return api_error_response("not_found", NOT_FOUND)
    if isinstance(exc, SuspiciousOperation):
        return api_error_response("invalid_input", "Invalid request")
    if isinstance(exc, drf_exceptions.APIException) and exc.status_code < 500:
        return api_error_response("invalid_input", str(exc.detail), status=exc.status_code)
    logger.exception("Unhandled exception in API view", exc_info=exc)
    return api_error_response("internal", INTERNAL)
