"""OpenAPI pieces: the DOM-04 error envelope per status, the `{"data": …}` envelope, and the AutoSchema.

`ApiAutoSchema` (`DEFAULT_SCHEMA_CLASS`) adds to every operation of an authenticated endpoint the answers
any request may get — 401, 403, 429 and 500 — so a view's `extend_schema(responses=…)` lists only its own:
the success body and `errors(400, 404, …)`.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
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
    fields = serializers.DictField(  # type: ignore[assignment]  # the wire field `fields`
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
        if (
            operation
            and "requestBody" in operation
            and method in ("POST", "PUT", "PATCH")
            and method not in getattr(self.view, "empty_body_methods", ())
        ):
            # API-05: `ApiView` refuses an empty body ("Invalid JSON in request body") unless the method takes none
            operation["requestBody"]["required"] = True
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
                    bodies[str(status)] = self._get_response_for_code(  # type: ignore[no-untyped-call]
                        OpenApiResponse(serializer, description=description), str(status), direction=direction
                    )
        return bodies


# API-09 path parameters as documented: `SPECTACULAR_SETTINGS["PATH_CONVERTER_OVERRIDES"]` types the routes'
# converters `id` (a UUID) and `contact` (a UUID or an email address); the views' explicit path parameters reuse them.
_SPECTACULAR: dict[str, Any] = settings.SPECTACULAR_SETTINGS
CONTACT_REF_SCHEMA: dict[str, Any] = _SPECTACULAR["PATH_CONVERTER_OVERRIDES"]["contact"]


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


# Django's EmailValidator (owlat.contacts.is_valid_email) is stricter than JSON Schema's `email` format: the domain
# has a dot and a top-level label of at least two characters
EMAIL_DOMAIN_PATTERN = r"@[^@\s]+\.[A-Za-z0-9-]{2,63}$"


# a character Python's `str.strip()` keeps: the value is not blank once trimmed (Python's whitespace, which is not
# JSON Schema's `\s`: it includes the separators U+001C…U+001F and U+0085, not U+FEFF)
NOT_ONLY_WHITESPACE = (
    "[^\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
)


class StringFieldExtension(OpenApiSerializerFieldExtension):
    """Documents in request bodies and queries what the API's string fields refuse, so that the document calls
    valid exactly what the API accepts (the fuzzer's acceptance checks hold it to that):

    - a required field the API refuses blank (`allow_blank=False`, or `schema_non_blank=True` where the check
      happens later with the spec's message) is `minLength: 1`, and `pattern: NOT_ONLY_WHITESPACE` when the value
      is trimmed;
    - a field with a `schema_pattern` (an event name) carries that pattern, anchored;
    - an email address is `format: email` of at most 254 characters (blank allowed where it means "clear");
    - a comma-separated choice list (`allowed`) is a pattern of those values.
    """

    target_class = "owlat.api.fields.StringField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        from owlat.api.serializers import EmailAddressField, TimezoneField, _timezones
        from owlat.contacts import MAX_EMAIL_LENGTH

        field = self.target
        schema = auto_schema._map_serializer_field(field, direction, bypass_extensions=True)
        if direction != "request" or field.read_only:
            return schema
        allowed = getattr(field, "allowed", None)
        constraints: dict[str, Any] = {}
        if allowed:
            values = "|".join(re.escape(value) for value in allowed)
            constraints["pattern"] = rf"^[\s,]*(?:(?:{values})\s*(?:,[\s,]*|$))*$"
        elif isinstance(field, EmailAddressField):
            constraints = {"format": "email", "maxLength": MAX_EMAIL_LENGTH, "pattern": EMAIL_DOMAIN_PATTERN}
        elif getattr(field, "schema_pattern", None):
            constraints["pattern"] = f"^{field.schema_pattern}$"
        elif getattr(field, "schema_format", None):
            constraints["format"] = field.schema_format
            if field.schema_format == "email":
                constraints["pattern"] = EMAIL_DOMAIN_PATTERN
        elif isinstance(field, TimezoneField):
            constraints["enum"] = sorted(_timezones())
        non_blank = (
            not field.allow_blank
            or getattr(field, "schema_non_blank", False)
            or (field.required and isinstance(field, EmailAddressField))
        )
        if non_blank:
            constraints["minLength"] = max(schema.pop("minLength", 0), 1)
            if (
                field.trim_whitespace or getattr(field, "schema_non_blank", False)
            ) and "pattern" not in constraints:
                constraints["pattern"] = NOT_ONLY_WHITESPACE
            # under `allOf`, so that drf-spectacular does not add its blank alternative (`maxLength: 0`), which it
            # offers for every constrained string field that allows blank
            schema["allOf"] = [constraints]
        else:
            schema.update(constraints)  # with drf-spectacular's blank alternative (not offered for an enum)
            if "enum" in schema:
                schema["enum"] = ["", *schema["enum"]]
        return schema


class JSONValueFieldExtension(OpenApiSerializerFieldExtension):
    """Free-form JSON: any value, or an object where the field takes only objects (`object_only`)."""

    target_class = "owlat.api.fields.JSONValueField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        from drf_spectacular.drainage import has_override

        if has_override(
            self.target, "field"
        ):  # a subclass that documents itself (segment filters, audience, …)
            return auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if getattr(self.target, "object_only", False):
            return {"type": "object", "additionalProperties": {}}
        return {}


def allow_empty_query_values(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: an optional string query parameter sent empty (`?status=`) counts as absent (the query
    serializers, `owlat.api.fields.QuerySerializer`), so the document says `allowEmptyValue` (an empty `limit` is
    no integer: 400 "Invalid limit"). Not needed on a free-text parameter (`search`, `cursor`), where the empty
    string is a valid value (and a fuzzer reads the parameter as a string only when its schema is one)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                schema = parameter.get("schema", {})
                if (
                    parameter.get("in") == "query"
                    and not parameter.get("required")
                    and schema.get("type", "string") == "string"
                    and set(schema) - {"type", "description", "example"}  # else "" is a valid value anyway
                ):
                    parameter["allowEmptyValue"] = True
    return result


def top_level_nulls_mean_absent(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: a top-level `null` in a request body means the key is absent (API-05,
    `owlat.api.parsers.JSONObjectParser`), so an optional top-level property of a request body is `nullable`.
    Applied to the components used only as whole request bodies (a null nested deeper is a value)."""
    schemas = result.get("components", {}).get("schemas", {})
    bodies: set[str] = set()
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            content = (
                (operation.get("requestBody") or {}).get("content", {}) if isinstance(operation, dict) else {}
            )
            for media in content.values():
                ref = media.get("schema", {}).get("$ref", "")
                if ref.startswith("#/components/schemas/"):
                    bodies.add(ref.rsplit("/", 1)[1])
    # a body documented per kind (`oneOf` the kinds' components): each kind's component is a whole body too
    kinds = {
        name: [
            item["$ref"].rsplit("/", 1)[1]
            for item in schemas.get(name, {}).get("oneOf", [])
            if "$ref" in item
        ]
        for name in bodies
    }
    proxies = {name for name, refs in kinds.items() if refs}
    bodies |= {ref for name in proxies for ref in kinds[name]}
    nested = {
        name
        for name in bodies
        if any(
            f'schemas/{name}"' in repr(s).replace("'", '"')
            for other, s in schemas.items()
            if other not in proxies
        )
    }
    for name in bodies - nested:
        component = schemas.get(name, {})
        required = set(component.get("required", []))
        for key, prop in component.get("properties", {}).items():
            if key not in required and not prop.get("readOnly"):
                prop["nullable"] = True
    return result


# Request bodies that need one of several optional keys (a rule a serializer's `required` cannot state)
REQUIRE_ONE_OF: dict[str, tuple[str, ...]] = {
    "TopicSubscribeRequest": ("email", "contactId"),  # API-20: "Either email or contactId is required"
    "TransactionalSendRequest": (
        "transactionalId",
        "slug",
    ),  # API-22: "Either transactionalId or slug is required"
}


# Request bodies with another rule across their keys (a JSON schema the serializer's fields cannot state)
BODY_RULES: dict[str, dict[str, Any]] = {
    # inbox handling rules: a relabel rule names its category, an archive rule none
    "HandlingRuleWriteRequest": {
        "oneOf": [
            {
                "properties": {"action": {"enum": ["archive"]}},
                "not": {"required": ["category"], "properties": {"category": {"type": "string"}}},
            },
            {
                "properties": {"action": {"enum": ["relabel"]}, "category": {"type": "string"}},
                "required": ["category"],
            },
        ]
    },
    # a rule changed to archive names no category
    "PatchedHandlingRuleWriteRequest": {
        "not": {
            "required": ["action", "category"],
            "properties": {"action": {"enum": ["archive"]}, "category": {"type": "string"}},
        }
    },
    # the model provider: a new API key or clearing the stored one, not both; and not clearing it while naming a
    # provider that needs one
    "ModelProviderWriteRequest": {
        "allOf": [
            {
                "not": {
                    "required": ["apiKey", "clearApiKey"],
                    "properties": {"apiKey": {"type": "string"}, "clearApiKey": {"enum": [True]}},
                }
            },
            {
                "not": {
                    "required": ["provider", "clearApiKey"],
                    "properties": {
                        "provider": {"enum": ["openai", "openrouter"]},
                        "clearApiKey": {"enum": [True]},
                    },
                    "not": {"required": ["apiKey"], "properties": {"apiKey": {"type": "string"}}},
                }
            },
        ]
    },
}
BODY_RULES["PatchedModelProviderWriteRequest"] = BODY_RULES["ModelProviderWriteRequest"]


def require_one_of(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: `anyOf` the keys of `REQUIRE_ONE_OF`, and the `BODY_RULES`, on those request bodies."""
    from drf_spectacular.drainage import warn

    schemas = result.get("components", {}).get("schemas", {})
    for name in [*REQUIRE_ONE_OF, *BODY_RULES]:
        if name not in schemas:
            warn(f"REQUIRE_ONE_OF or BODY_RULES names {name}, which the document does not have")
    for name, keys in REQUIRE_ONE_OF.items():
        if name in schemas:
            schemas[name]["anyOf"] = [
                {"required": [key], "properties": {key: {"type": "string", "minLength": 1}}} for key in keys
            ]
    for name, rule in BODY_RULES.items():
        if name in schemas:
            schemas[name].update(rule)
    return result
