"""`GET /api/v1/health` (API-23, D-15): no key, no rate limit, not enveloped."""

from __future__ import annotations

from django.db import connection
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from owlat.api.base import PublicApiView, iso


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "error"])
    timestamp = serializers.CharField(help_text="ISO 8601 UTC with milliseconds.")
    database = serializers.ChoiceField(choices=["ok", "unavailable"])
    workerHeartbeatAgeSeconds = serializers.FloatField(
        allow_null=True, help_text="Seconds since a background worker last reported; null when none has."
    )


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return False
    return True


class HealthView(PublicApiView):
    @extend_schema(
        operation_id="health",
        summary="Health check",
        description="Needs no API key and is not rate-limited. 503 when the database is unreachable.",
        responses={200: HealthSerializer, 503: HealthSerializer},
        tags=["Health"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        database_ok = _database_ok()
        heartbeat_age = None
        if database_ok:
            from owlat.jobs import newest_heartbeat_age_seconds

            try:
                age = newest_heartbeat_age_seconds()
            except Exception:
                age = None
            heartbeat_age = None if age is None else round(age, 1)
        body = {
            "status": "ok" if database_ok else "error",
            "timestamp": iso(timezone.now()),
            "database": "ok" if database_ok else "unavailable",
            "workerHeartbeatAgeSeconds": heartbeat_age,
        }
        return Response(body, status=200 if database_ok else 503)
