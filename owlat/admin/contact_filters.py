"""The contact list's filters: live/deleted (DOM-05), globally unsubscribed, language and topic, each with
choices from one small query."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from owlat.admin_tenancy import tenant_filter
from owlat.models import Topic


class ContactLiveFilter(admin.SimpleListFilter):
    """Soft-deleted contacts are hidden unless asked for (DOM-05)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any):
        return (("deleted", "Deleted"), ("all", "All"))

    def choices(self, changelist: Any):
        value = self.value()
        yield {
            "selected": value is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Live",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": value == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: Any):
        value = self.value()
        if value == "all":
            return queryset
        if value == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        return queryset.filter(deleted_at__isnull=True)


class UnsubscribedFilter(admin.SimpleListFilter):
    title = "globally unsubscribed"
    parameter_name = "unsubscribed"

    def lookups(self, request: HttpRequest, model_admin: Any):
        return (("yes", "Yes"), ("no", "No"))

    def queryset(self, request: HttpRequest, queryset: Any):
        if self.value() == "yes":
            return queryset.filter(unsubscribed_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(unsubscribed_at__isnull=True)
        return queryset


class LanguageFilter(admin.SimpleListFilter):
    """Contacts by language. The choices are the languages the organization's templates are written in (one
    small query), not a `SELECT DISTINCT language` over every contact of the organization."""

    title = "language"
    parameter_name = "language"

    def lookups(self, request: HttpRequest, model_admin: Any):
        from django.apps import apps

        langs: list[str] = []
        if apps.is_installed("templates"):
            EmailTemplate = apps.get_model("templates", "EmailTemplate")
            rows = tenant_filter(request, EmailTemplate.objects.all()).values_list(
                "default_language", "supported_languages"
            )[:500]
            for default, supported in rows:
                langs.extend([default, *(supported or [])])
        langs = sorted({lang for lang in langs if lang})
        value = self.value()
        if value and value not in ("none", *langs):
            langs.append(value)
        return [*((lang, lang) for lang in langs), ("none", "No language")]

    def queryset(self, request: HttpRequest, queryset: Any):
        value = self.value()
        if value == "none":
            return queryset.filter(language__isnull=True)
        if value:
            return queryset.filter(language__iexact=value)
        return queryset


class TopicFilter(admin.SimpleListFilter):
    """Contacts of one topic; choices are the active organization's topics (not a scan of every membership)."""

    title = "topic"
    parameter_name = "topic"

    def lookups(self, request: HttpRequest, model_admin: Any):
        topics = tenant_filter(request, Topic.objects.order_by("name"))
        return [(str(pk), name) for pk, name in topics.values_list("pk", "name")[:200]]

    def queryset(self, request: HttpRequest, queryset: Any):
        if self.value():
            try:
                topic_id = uuid.UUID(self.value())
            except ValueError:
                return queryset.none()
            return queryset.filter(topic_memberships__topic_id=topic_id)
        return queryset
