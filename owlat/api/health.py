"""`GET /api/v1/health` (API-23, D-15): no key, no rate limit, not enveloped."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from owlat.api.base import PublicApiView, iso
from owlat.sql import database_ping


class QueueHealthSerializer(serializers.Serializer):
    name = serializers.CharField(
        help_text="The queue (one django-q2 cluster each): default, transactional, campaign, inbox."
    )
    status = serializers.ChoiceField(
        choices=["ok", "stalled", "down"],
        help_text="stalled: its oldest task waited longer than HEALTH_QUEUE_AGE_DEGRADED_SECONDS; down: its "
        "cluster stopped reporting.",
    )
    queued = serializers.IntegerField(help_text="Tasks waiting in the broker (or being run).")
    oldestTaskAgeSeconds = serializers.FloatField(
        allow_null=True, help_text="Seconds since the oldest task of the queue was enqueued; null when empty."
    )
    clusterHeartbeatAgeSeconds = serializers.FloatField(
        allow_null=True, help_text="Seconds since the queue's cluster last reported; null when none has."
    )


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["ok", "degraded", "error"],
        help_text="error: the database does not answer (503); degraded: a queue is stalled or down.",
    )
    timestamp = serializers.CharField(help_text="ISO 8601 UTC with milliseconds.")
    database = serializers.ChoiceField(choices=["ok", "unavailable"])
    workerHeartbeatAgeSeconds = serializers.FloatField(
        allow_null=True, help_text="Seconds since a background worker last reported; null when none has."
    )
    queueAgeDegradedSeconds = serializers.FloatField(
        help_text="The oldest-task age past which a queue is stalled."
    )
    queues = QueueHealthSerializer(many=True, help_text="Per queue; empty when the database does not answer.")


def _database_ok() -> bool:
    try:
        database_ping()
    except Exception:
        return False
    return True


def _queues() -> list[dict]:
    from owlat.clusters import queue_states

    return [
        {
            "name": q.name,
            "status": q.status,
            "queued": q.queued,
            "oldestTaskAgeSeconds": q.oldest_task_age,
            "clusterHeartbeatAgeSeconds": q.cluster_heartbeat_age,
        }
        for q in queue_states()
    ]


class HealthView(PublicApiView):
    @extend_schema(
        operation_id="health",
        summary="Health check",
        description="Needs no API key and is not rate-limited. 503 when the database is unreachable; "
        "`degraded` (200) when a queue's oldest task is older than `queueAgeDegradedSeconds` or its cluster "
        "stopped reporting.",
        responses={200: HealthSerializer, 503: HealthSerializer},
        tags=["Health"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        database_ok = _database_ok()
        heartbeat_age = None
        queues: list[dict] = []
        if database_ok:
            from owlat.jobs import newest_heartbeat_age_seconds

            try:
                age = newest_heartbeat_age_seconds()
                queues = _queues()
            except Exception:
                age = None
            heartbeat_age = None if age is None else round(age, 1)
        status = "error"
        if database_ok:
            status = "degraded" if any(q["status"] != "ok" for q in queues) else "ok"
        body = {
            "status": status,
            "timestamp": iso(timezone.now()),
            "database": "ok" if database_ok else "unavailable",
            "workerHeartbeatAgeSeconds": heartbeat_age,
            "queueAgeDegradedSeconds": float(settings.HEALTH_QUEUE_AGE_DEGRADED_SECONDS),
            "queues": queues,
        }
        return Response(body, status=200 if database_ok else 503)
