"""A minimal DRF view that inserts one row: a serializer validates the JSON body, one INSERT, 201 with the id.
No authentication, permissions or throttling (the project's middleware still runs, as for every request)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bench.baseline.models import BaselineRow


class BaselineRowSerializer(serializers.Serializer):
    eventName = serializers.CharField(max_length=200)  # the events API body
    eventProperties = serializers.JSONField(required=False, allow_null=True)


class BaselineRowView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    def post(self, request: Request) -> Response:
        body = BaselineRowSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        row = BaselineRow.objects.create(
            name=body.validated_data["eventName"], properties=body.validated_data.get("eventProperties")
        )
        return Response({"id": row.pk}, status=201)
