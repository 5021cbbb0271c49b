from django.db import models
from django.utils import timezone


class BaselineRow(models.Model):
    """One row per request of the baseline view: about the size of an event (a name and a small JSON body)."""

    name = models.CharField(max_length=200)
    properties = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
