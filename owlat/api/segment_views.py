"""Segment endpoints (API-25): list, create, read, update, delete, and the contacts a segment matches now.

Split from `owlat.api.views` (the contact and topic endpoints) to keep each module readable in one sitting; the
same shape: serializers validate, `owlat.segments` writes, serializers answer.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from owlat.api.base import ApiView, require_uuid, validated
from owlat.api.schema import DeletedSerializer, envelope, errors
from owlat.api.serializers import ContactSerializer, SegmentSerializer, SegmentWriteSerializer
from owlat.api.views import SEARCH, list_by_name
from owlat.inuse import segment_in_use
from owlat.models import Segment

SEGMENT_ID = OpenApiParameter(
    "segment_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The segment's id."
)


# --- segments (API-25) -------------------------------------------------------------------------------------


class SegmentListView(ApiView):
    required_scopes = {"GET": "segments:read", "POST": "segments:write"}
    list_key = "segments"

    @extend_schema(
        operation_id="segments_list",
        summary="List segments",
        description="Newest first; `search` filters by name. Scope `segments:read`.",
        parameters=[SEARCH],
        responses={200: SegmentSerializer(many=True), **errors(400)},
        tags=["Segments"],
    )
    def get(self, request: Request) -> Response:
        return list_by_name(self, request, Segment, SegmentSerializer)

    @extend_schema(
        operation_id="segments_create",
        summary="Create a segment",
        description="`filters` are validated; topic conditions must name a topic of this organization. "
        "Scope `segments:write`.",
        request=SegmentWriteSerializer,
        responses={201: envelope(SegmentSerializer), **errors(400)},
        tags=["Segments"],
    )
    def post(self, request: Request) -> Response:
        from owlat.segments import segment_create

        fields = validated(
            SegmentWriteSerializer, request.data, context={"organization_id": self.organization_id}
        )
        segment = segment_create(organization_id=self.organization_id, actor=self.actor, **fields)
        return self.created(SegmentSerializer(segment).data)


@extend_schema(parameters=[SEGMENT_ID], tags=["Segments"])
class SegmentDetailView(ApiView):
    required_scopes = {
        "GET": "segments:read",
        "PUT": "segments:write",
        "PATCH": "segments:write",
        "DELETE": "segments:write",
    }

    @extend_schema(
        operation_id="segments_retrieve",
        summary="Get a segment",
        description="Scope `segments:read`.",
        responses={200: envelope(SegmentSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, segment_id: str) -> Response:
        return self.ok(SegmentSerializer(self.get_owned(Segment, segment_id, "segment")).data)

    @extend_schema(
        operation_id="segments_update",
        summary="Update a segment",
        description="Only the keys sent change (PUT and PATCH alike); new filters recount the segment. "
        "Scope `segments:write`.",
        request=SegmentWriteSerializer(partial=True),
        responses={200: envelope(SegmentSerializer), **errors(400, 404)},
    )
    def put(self, request: Request, segment_id: str) -> Response:
        from owlat.segments import segment_update

        segment_pk = require_uuid(segment_id, "segment")
        fields = validated(
            SegmentWriteSerializer,
            request.data,
            partial=True,
            context={"organization_id": self.organization_id},
        )
        segment = segment_update(segment=self.get_owned(Segment, segment_pk, "segment"), changes=fields)
        return self.ok(SegmentSerializer(segment).data)

    patch = put

    @extend_schema(
        operation_id="segments_destroy",
        summary="Delete a segment",
        description="Refused (422 `segment_in_use`, with `usedBy`) while a campaign or automation uses it. "
        "Scope `segments:write`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404, 422)},
    )
    def delete(self, request: Request, segment_id: str) -> Response:
        from owlat.segments import segment_delete

        segment = self.get_owned(Segment, segment_id, "segment")
        return self.delete_unless_in_use(
            segment, "segment", segment_in_use, lambda: segment_delete(segment=segment)
        )


@extend_schema(parameters=[SEGMENT_ID], tags=["Segments"])
class SegmentContactsView(ApiView):
    required_scopes = {"GET": "segments:read"}

    @extend_schema(
        operation_id="segments_contacts_list",
        summary="List a segment's contacts",
        description="The contacts matching the segment's filters now, newest first. Scope `segments:read`.",
        responses={200: ContactSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, segment_id: str) -> Response:
        from owlat.conditions import filters_queryset_safe

        segment = self.get_owned(Segment, segment_id, "segment")
        queryset = filters_queryset_safe(self.organization_id, segment.filters)
        self.list_key = f"segments/{segment.pk}/contacts"
        return self.list_response(queryset, ContactSerializer)
