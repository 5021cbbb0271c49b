"""Sign-up form endpoints: the forms of the organization, listed and read (their topics, fields, public URL).
Forms are built in the admin (owlat.admin.signup_forms); the public posting endpoints are outside `/api/v1`
(owlat.signup.views)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from owlat.api.base import ApiView
from owlat.api.fields import TimestampField
from owlat.api.schema import envelope, errors
from owlat.api.views import SEARCH
from owlat.models import SignupForm

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


def _forms(organization_id: Any) -> QuerySet[SignupForm]:
    return SignupForm.objects.filter(organization_id=organization_id).prefetch_related(
        "form_topics__topic", "fields__property"
    )


class SignupFormListView(ApiView):
    required_scopes = {"GET": "topics:read"}
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


@extend_schema(parameters=[FORM_ID], tags=["Sign-up forms"])
class SignupFormDetailView(ApiView):
    required_scopes = {"GET": "topics:read"}

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
