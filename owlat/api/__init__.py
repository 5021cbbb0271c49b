"""The public API `/api/v1`: DRF views on the kernel's shared parts, and the kernel's own endpoints.

Shared parts (every app's `api/` package builds on them):

- `base.ApiView` — the base view: `ApiKeyAuthentication` (401), `ApiKeyRateThrottle` (429), `HasScope` and
  `FeatureFlagEnabled` (403), in that order; unsafe methods in one transaction; `Idempotency-Key` on POST;
  `X-RateLimit-*` headers; `ok/created/accepted/deleted/transitioned` build the `{"data": …}` answers;
  `get_owned(Model, id, "resource")` is the organization's row (400 malformed id, 404 unknown or foreign);
  `list_response(queryset, Serializer)` answers one keyset page; `delete_unless_in_use(...)` is the 422
  `<resource>_in_use` refusal of topics, segments and templates.
  `base.validated(Serializer, request.data | request.query_params)` runs a request serializer;
  `base.filter_by_params(queryset, params, status="status__in", ...)` applies the list filters that were sent.
- `errors` — `ApiError` and shorthands (`invalid_input`, `not_found`, `invalid_state`, …) for the DOM-04
  envelope; DRF `ValidationError`s become 400 with `data.field` / `data.fields`.
- `fields` — strict serializer fields (`StringField`, `StrictBooleanField`, `StrictIntegerField`,
  `TimestampField`, `ChoiceListField`, `JSONValueField`), `InputSerializer` (refuses `read_only_keys`) and
  `QuerySerializer` (an empty query parameter is absent).
- `pagination.KeysetPagination` — API-07 cursors (set `ordering` and `list_key` on the view).
- `schema` — `errors(400, 404, …)` and `envelope(Serializer)` for `extend_schema`.
- Routes are plain `path()`s: `ApiMiddleware` makes every `/api/v1` route slash-optional (API-01).

An app's API lives in `<app>/api/` (`serializers.py`, `views.py`, `urls.py`); `owlat/api/urls.py` includes
each app's `urls.py`. A new endpoint, HackSoft style (thin view, serializers in, a service call, serializer out):

    # campaigns/api/serializers.py
    from rest_framework import serializers
    from owlat.api.fields import InputSerializer, StringField, TimestampField

    class CampaignCreateSerializer(InputSerializer):
        read_only_keys = ("id", "status", "createdAt")
        name = StringField(max_length=200, trim_whitespace=True, allow_blank=False,
                           error_messages={"required": "name is required", "blank": "name is required"})
        templateId = serializers.UUIDField(source="template_id")

    class CampaignSerializer(serializers.Serializer):
        id = serializers.CharField(read_only=True)
        name = serializers.CharField()
        status = serializers.CharField()
        createdAt = TimestampField(source="created_at")  # ISO 8601 UTC, milliseconds, Z

    # campaigns/api/views.py
    from drf_spectacular.utils import extend_schema
    from owlat.api.base import ApiView, validated
    from owlat.api.schema import envelope, errors

    class CampaignListView(ApiView):
        required_scopes = {"GET": "campaigns:read", "POST": "campaigns:write"}
        feature_flag = "campaigns"
        ordering = ("-created_at", "-id")
        list_key = "campaigns"

        @extend_schema(summary="List campaigns", responses={200: CampaignSerializer(many=True), **errors(400)})
        def get(self, request):
            queryset = Campaign.objects.filter(organization_id=self.organization_id)
            return self.list_response(queryset, CampaignSerializer)

        @extend_schema(summary="Create a campaign", request=CampaignCreateSerializer,
                       responses={201: envelope(CampaignSerializer), **errors(400, 404)})
        def post(self, request):
            fields = validated(CampaignCreateSerializer, request.data)  # 400 naming the field
            campaign = campaign_create(organization_id=self.organization_id, actor=self.actor, **fields)
            return self.created(CampaignSerializer(campaign).data)

    # campaigns/api/urls.py
    urlpatterns = [path("campaigns", views.CampaignListView.as_view(), name="api-campaigns"), ...]

A transition is its own view: `POST campaigns/<id>/schedule` → `return self.transitioned(data, outcome)`
(422 `invalid_state` with `data.reason` on a refused edge); set `empty_body_methods = frozenset({"POST"})`
when it takes no body. Every method needs a scope in `required_scopes`, or it fails closed (500). The
schema adds 401/403/429/500 to every operation; list your own statuses with `errors(...)`.
"""
