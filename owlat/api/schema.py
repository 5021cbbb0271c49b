"""OpenAPI pieces: the DOM-04 error envelope per status, the `{"data": …}` envelope, and the AutoSchema.

`ApiAutoSchema` (`DEFAULT_SCHEMA_CLASS`) adds to every operation of an authenticated endpoint the answers
any request may get — 401, 403, 429 and 500 — so a view's `extend_schema(responses=…)` lists only its own:
the success body and `errors(400, 404, …)`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


def _error_serializer(name: str, category: str | None, data: serializers.Field | None, doc: str) -> type:
    body_fields: dict[str, Any] = {
        "message": serializers.CharField(help_text="A human-readable explanation."),
    }
    if category is not None:
        body_fields["category"] = serializers.ChoiceField(choices=[category], help_text="The error category.")
    if data is not None:
        body_fields["data"] = data
    body = type(f"{name}Body", (serializers.Serializer,), body_fields)
    return type(f"{name}", (serializers.Serializer,), {"error": body(), "__doc__": doc})


class FieldErrorData(serializers.Serializer):
    field = serializers.CharField(required=False, help_text="The first invalid field (dotted path).")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Every invalid field with its messages.",
    )


class RetryAfterData(serializers.Serializer):
    retryAfter = serializers.IntegerField(help_text="Seconds until a request is allowed again.")


InvalidInputError = _error_serializer(
    "InvalidInputError",
    "invalid_input",
    FieldErrorData(required=False),
    "400: the request is malformed; `data.field` names the offending field.",
)
UnauthenticatedError = _error_serializer(
    "UnauthenticatedError", "unauthenticated", None, "401: missing, malformed or unknown API key."
)
ForbiddenError = _error_serializer(
    "ForbiddenError", "forbidden", None, "403: the key lacks the scope, or the feature is disabled."
)
NotFoundError = _error_serializer("NotFoundError", "not_found", None, "404: no such resource.")
AlreadyExistsError = _error_serializer(
    "AlreadyExistsError", "already_exists", None, "409: the resource already exists."
)
ConflictError = _error_serializer(
    "ConflictError",
    "conflict",
    serializers.DictField(required=False),
    "409: a request with this Idempotency-Key is still being processed.",
)
InvalidStateError = _error_serializer(
    "InvalidStateError",
    "invalid_state",
    serializers.DictField(help_text="Always has `reason`; transitions add `from` and `to`."),
    "422: refused in the resource's current state.",
)
RateLimitedError = _error_serializer(
    "RateLimitedError", "rate_limited", RetryAfterData(), "429: the key's rate limit is exhausted."
)
InternalError = _error_serializer("InternalError", "internal", None, "500: an unexpected error.")
MethodNotAllowedError = _error_serializer("MethodNotAllowedError", None, None, "405: method not allowed.")

ERRORS: dict[int, tuple[type, str]] = {
    400: (InvalidInputError, "Invalid input; `error.data.field` names the field."),
    401: (UnauthenticatedError, "Missing, malformed or unknown API key."),
    403: (ForbiddenError, "The key lacks the required scope, or the feature is disabled."),
    404: (NotFoundError, "Not found."),
    409: (AlreadyExistsError, "Already exists."),
    422: (InvalidStateError, "Refused in the current state; `error.data.reason` says why."),
    429: (RateLimitedError, "Rate limit exceeded; retry after `Retry-After` seconds."),
    500: (InternalError, "Internal server error."),
}
COMMON_ERRORS = (401, 403, 429, 500)


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """`responses` entries for error statuses: `errors(400, 404)`; the common ones are added automatically."""
    return {status: OpenApiResponse(ERRORS[status][0], description=ERRORS[status][1]) for status in statuses}


@cache
def envelope(
    serializer_class: type[serializers.Serializer], name: str | None = None, *, many: bool = False
) -> type:
    """`{"data": <serializer_class>}` as a serializer for the schema (`envelope(ContactSerializer)`);
    `many=True`: `{"data": [<serializer_class>, …]}` (an unpaginated list)."""
    base = name or serializer_class.__name__.removesuffix("Serializer")
    what = f"the {base.lower()} list" if many else f"the {base.lower()}"
    return type(
        f"{base}{'List' if many else ''}Response",
        (serializers.Serializer,),
        {"data": serializer_class(many=many), "__doc__": f"`data` holds {what}."},
    )


class ApiAutoSchema(AutoSchema):
    """Adds the common error answers (401, 403, 429, 500) to every authenticated operation; bodies are JSON.

    A view that answers PATCH like PUT declares `patch = put`: the PATCH operation gets PUT's documentation
    with the id `<put id minus _update>_partial_update` and the summary "<PUT's summary> (partial)"."""

    def get_operation(self, path: str, path_regex: str, path_prefix: str, method: str, registry: Any) -> Any:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        view_class = type(self.view)
        if (
            operation
            and method == "PATCH"
            and getattr(view_class, "patch", None) is getattr(view_class, "put", 0)
        ):
            operation["operationId"] = operation["operationId"].removesuffix("_update") + "_partial_update"
            operation["summary"] = f"{operation['summary']} (partial)"
        return operation

    def map_parsers(self) -> list[str]:
        # JSONObjectParser reads any Content-Type as JSON (API-05); clients send application/json.
        return ["application/json"]

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        bodies = super()._get_response_bodies(direction)
        if getattr(self.view, "authentication_classes", None):
            for status in COMMON_ERRORS:
                if str(status) not in bodies:
                    serializer, description = ERRORS[status]
                    bodies[str(status)] = self._get_response_for_code(
                        OpenApiResponse(serializer, description=description), str(status), direction=direction
                    )
        return bodies


# API-09 path parameters as documented: `SPECTACULAR_SETTINGS["PATH_CONVERTER_OVERRIDES"]` types the routes'
# converters `id` (a UUID) and `contact` (a UUID or an email address); the views' explicit path parameters reuse them.
CONTACT_REF_SCHEMA: dict[str, Any] = settings.SPECTACULAR_SETTINGS["PATH_CONVERTER_OVERRIDES"]["contact"]


class DeletedSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The id of the deleted resource.")
    deleted = serializers.BooleanField(help_text="Always true.")


class TransitionSerializer(serializers.Serializer):
    """What a state-changing request did."""

    applied = serializers.ChoiceField(
        choices=["transitioned", "recorded", "rescheduled"],
        help_text="`recorded` when the resource was already in the target state; `rescheduled` when a "
        "scheduled campaign got a new time.",
    )
    # `from` is a Python keyword; declared through `get_fields`
    to = serializers.CharField(allow_null=True, help_text="The state after the request (null: none).")

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        return {
            "applied": fields["applied"],
            "from": serializers.CharField(allow_null=True, help_text="The state before the request."),
            "to": fields["to"],
        }


@cache
def transitioned_envelope(serializer_class: type[serializers.Serializer], name: str | None = None) -> type:
    """`{"data": <resource after>, "transition": {...}}` (API-24) for the schema."""
    base = name or serializer_class.__name__.removesuffix("Serializer")
    return type(
        f"{base}TransitionResponse",
        (serializers.Serializer,),
        {"data": serializer_class(), "transition": TransitionSerializer()},
    )
