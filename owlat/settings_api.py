"""drf-spectacular's settings: how the API document (`/api/v1/schema`) describes the API. Kept apart from
owlat/settings.py, which imports `SPECTACULAR_SETTINGS` from here; plain data, no imports."""

SPECTACULAR_SETTINGS = {
    "TITLE": "Owlat API",
    "DESCRIPTION": (
        "The public REST API of Owlat: contacts, topics, segments, events, transactional email, templates "
        "and automations.\n\n"
        "Authenticate with an API key created in the admin: `Authorization: Bearer lm_live_…`. Each key "
        "carries scopes; each operation names the one it needs. Bodies are JSON objects with camelCase keys; "
        "timestamps are ISO 8601 UTC with milliseconds. Lists are paginated with `limit` and an opaque "
        '`cursor`. Errors answer `{"error": {"category", "message", "data"?}}`. A key may make '
        "10 requests per second (burst 15); every answer carries `X-RateLimit-*` headers. `POST` accepts an "
        "`Idempotency-Key` header: a retry with the same key and body returns the first answer."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": [],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "owlat.api.schema.allow_empty_query_values",
        "owlat.api.schema.top_level_nulls_mean_absent",
        "owlat.api.schema.require_one_of",
    ],
    # API-09: a resource id in a path is the string form of a UUID. The route takes any segment (converter `id`,
    # owlat/api/urls.py) so that the view answers a malformed one with 400 "Invalid <resource> ID format" instead
    # of the resolver's 404; the document states the real type. A contact reference (`contact`: `{idOrEmail}`,
    # `{emailOrId}`) is an id or an email address of at most 254 characters.
    "PATH_CONVERTER_OVERRIDES": {
        "id": {"type": "string", "format": "uuid"},
        "contact": {
            "anyOf": [
                {"type": "string", "format": "uuid"},
                {"type": "string", "format": "email", "maxLength": 254},
            ]
        },
    },
    "ENUM_NAME_OVERRIDES": {
        "AutomationStatusEnum": "automations.models.AutomationStatus",
        "TriggerTypeEnum": "automations.models.TriggerType",
        "StepTypeEnum": "automations.models.StepType",
        # the discriminator of a step documented per step type (automations.api.variants)
        "EmailStepTypeEnum": ["email"],
        "DelayStepTypeEnum": ["delay"],
        "ConditionStepTypeEnum": ["condition"],
        "EndStepTypeEnum": ["end"],
        "RunStatusEnum": "automations.models.RunStatus",
        "StepRunStatusEnum": "automations.models.StepRunStatus",
        "TemplateStatusEnum": "templates.models.TemplateStatus",
        "TemplateTypeEnum": "templates.models.TemplateType",
        "AuthResultEnum": "inbox.receive.AUTH_RESULTS",
        "RelabelCategoryEnum": "inbox.configuration.RELABEL_CATEGORIES",
        # an A/B variant, wherever a request names one (a winner, a filter, a test send)
        "AbVariantEnum": ["A", "B"],
        "SignupFieldKindEnum": ["first_name", "last_name", "language", "property"],
    },
}
