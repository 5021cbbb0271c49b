"""Sign-up form endpoints: the organization's forms listed, read, created, changed and deleted (their topics,
fields, translations, public URL). Writes go through `owlat.signup.writes`, which checks them with the admin's own
forms; the public posting endpoints are outside `/api/v1` (owlat.signup.views)."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from owlat.api.base import ApiView, require_uuid, validated
from owlat.api.errors import invalid_input
from owlat.api.fields import TimestampField
from owlat.api.schema import DeletedSerializer, envelope, errors
from owlat.api.signup_inputs import SignupFormUpdateSerializer, SignupFormWriteSerializer
from owlat.api.views import SEARCH
from owlat.ids import UUIDLike
from owlat.inuse import form_in_use
from owlat.models import SignupForm
from owlat.signup.writes import SETTINGS_KEYS, SignupFormChanges, SignupFormInvalid, signup_form_write

FORM_ID = OpenApiParameter("form_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The form's id.")


class SignupFormTopicSerializer(serializers.Serializer):
    topicId = serializers.CharField(source="topic_id", read_only=True)
    name = serializers.CharField(source="topic.name", read_only=True)
    preselected = serializers.BooleanField(read_only=True)


class SignupFormFieldSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["first_name", "last_name", "language", "property"], read_only=True
    )
    propertyKey = serializers.CharField(source="property.key", read_only=True, allow_null=True, default=None)
    label = serializers.CharField(read_only=True)  # type: ignore[assignment]  # wire fields named as
    required = serializers.BooleanField(read_only=True)  # type: ignore[assignment]  # Field attributes


class SignupFormSerializer(serializers.Serializer):
    id = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    isActive = serializers.BooleanField(source="is_active", read_only=True)
    requireDoubleOptIn = serializers.BooleanField(source="require_double_opt_in", read_only=True)
    title = serializers.CharField(read_only=True)
    publicUrl = serializers.SerializerMethodField()
    allowedOrigins = serializers.SerializerMethodField()
    topics = SignupFormTopicSerializer(source="form_topics", many=True, read_only=True)
    fields = SignupFormFieldSerializer(many=True, read_only=True)  # type: ignore[assignment]  # wire field
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)

    @extend_schema_field(OpenApiTypes.URI)
    def get_publicUrl(self, obj: SignupForm) -> str:
        from owlat.signup.embed import public_url

        return public_url(obj)

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_allowedOrigins(self, obj: SignupForm) -> list[str]:
        return obj.origins()


def _forms(organization_id: UUIDLike) -> QuerySet[SignupForm]:
    return SignupForm.objects.filter(organization_id=organization_id).prefetch_related(
        "form_topics__topic", "fields__property"
    )


def _write(organization_id: UUIDLike, form: SignupForm | None, fields: dict) -> SignupForm:
    """The validated body through `signup_form_write`; a refusal → 400 naming the field."""
    changes = SignupFormChanges(
        settings={SETTINGS_KEYS[key]: value for key, value in fields.items() if key in SETTINGS_KEYS},
        topics=fields.get("topics"),
        fields=fields.get("fields"),
        texts=fields.get("texts"),
    )
    try:
        saved = signup_form_write(organization_id=organization_id, form=form, changes=changes)
    except SignupFormInvalid as exc:
        raise invalid_input(exc.message, field=exc.field) from None
    return _forms(organization_id).get(pk=saved.pk)


class SignupFormListView(ApiView):
    required_scopes = {"GET": "topics:read", "POST": "topics:manage"}
    list_key = "forms"

    @extend_schema(
        operation_id="forms_list",
        summary="List sign-up forms",
        description="Newest first; `search` filters by name. Scope `topics:read`.",
        parameters=[SEARCH],
        responses={200: SignupFormSerializer(many=True), **errors(400)},
        tags=["Sign-up forms"],
    )
    def get(self, request: Request) -> Response:
        from owlat.api.views import search_term

        queryset = _forms(self.organization_id)
        term = search_term(request)
        if term:
            queryset = queryset.filter(name__icontains=term)
        return self.list_response(queryset, SignupFormSerializer)

    @extend_schema(
        operation_id="forms_create",
        summary="Create a sign-up form",
        description="`name` and `topics` are required; every other setting has the admin's default. Topics and "
        "contact properties must be the organization's. Scope `topics:manage`.",
        request=SignupFormWriteSerializer,
        responses={201: envelope(SignupFormSerializer), **errors(400)},
        tags=["Sign-up forms"],
    )
    def post(self, request: Request) -> Response:
        fields = validated(SignupFormWriteSerializer, request.data)
        return self.created(SignupFormSerializer(_write(self.organization_id, None, fields)).data)


@extend_schema(parameters=[FORM_ID], tags=["Sign-up forms"])
class SignupFormDetailView(ApiView):
    required_scopes = {
        "GET": "topics:read",
        "PUT": "topics:manage",
        "PATCH": "topics:manage",
        "DELETE": "topics:manage",
    }

    @extend_schema(
        operation_id="forms_retrieve",
        summary="Get a sign-up form",
        description="Scope `topics:read`.",
        responses={200: envelope(SignupFormSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, form_id: str) -> Response:
        form = self.get_owned(SignupForm, form_id, "form")
        form = _forms(self.organization_id).get(pk=form.pk)
        return self.ok(SignupFormSerializer(form).data)

    @extend_schema(
        operation_id="forms_update",
        summary="Update a sign-up form",
        description="Only the keys sent change (PUT and PATCH alike); `topics`, `fields` and `texts`, when sent, "
        "replace the form's. Scope `topics:manage`.",
        request=SignupFormUpdateSerializer,
        responses={200: envelope(SignupFormSerializer), **errors(400, 404)},
    )
    def put(self, request: Request, form_id: str) -> Response:
        form_pk = require_uuid(form_id, "form")
        fields = validated(SignupFormUpdateSerializer, request.data)
        form = _write(self.organization_id, self.get_owned(SignupForm, form_pk, "form"), fields)
        return self.ok(SignupFormSerializer(form).data)

    patch = put

    @extend_schema(
        operation_id="forms_destroy",
        summary="Delete a sign-up form",
        description="Its public page and embeds stop answering, and sign-ups waiting for their confirmation can "
        "no longer confirm. Refused (422 `form_in_use`, with `usedBy`) while a segment or an active automation "
        "asks whether a contact joined through it. Scope `topics:manage`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404, 422)},
    )
    def delete(self, request: Request, form_id: str) -> Response:
        form = self.get_owned(SignupForm, form_id, "form")
        return self.delete_unless_in_use(
            form,
            "form",
            form_in_use,
            form.delete,
            "Form is in use by a segment or automation and cannot be deleted",
        )
