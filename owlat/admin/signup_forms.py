"""Sign-up forms in the back-office: a form builder (topics, fields and translations as rows with pickers), the
public link, the embed snippet with a copy button, and the numbers per day (submissions, confirmations,
conversion, refusals by reason)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.db.models import Count, IntegerField, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from owlat.admin_tenancy import TenantModelAdmin, TenantStackedInline, TenantTabularInline
from owlat.models import (
    SignupForm,
    SignupFormDay,
    SignupFormField,
    SignupFormText,
    SignupFormTopic,
)
from owlat.signup.forms import SignupFormFieldForm, SignupFormSettingsForm, SignupFormTextForm


class SignupFormTopicInline(TenantTabularInline):
    manage_permission = "topics:manage"
    model = SignupFormTopic
    fields = ("topic", "preselected", "position")
    extra = 0
    min_num = 1
    verbose_name = "topic offered"
    verbose_name_plural = "Topics offered (several are shown as checkboxes; the visitor picks at least one)"


class SignupFormFieldInline(TenantTabularInline):
    manage_permission = "topics:manage"
    model = SignupFormField
    form = SignupFormFieldForm
    extra = 0
    verbose_name = "field asked"
    verbose_name_plural = "Fields asked besides the email address (always asked, always required)"


#: the admin builds its forms with its own field callback, in place of the forms' `https_urls`
_URLS = {models.URLField: {"assume_scheme": "https"}}


class SignupFormTextInline(TenantStackedInline):
    manage_permission = "topics:manage"
    formfield_overrides = _URLS
    model = SignupFormText
    form = SignupFormTextForm
    extra = 0
    verbose_name_plural = "Translations (empty texts fall back to the form's own)"


def _recent_days() -> Any:
    return timezone.now().date() - timezone.timedelta(days=29)


@admin.register(SignupForm)
class SignupFormAdmin(TenantModelAdmin):
    manage_permission = "topics:manage"
    formfield_overrides = _URLS
    form = SignupFormSettingsForm
    inlines = (SignupFormTopicInline, SignupFormFieldInline, SignupFormTextInline)
    list_display = (
        "name",
        "is_active",
        "topic_count",
        "submissions_30d",
        "confirmations_30d",
        "conversion_30d",
    )
    list_filter = ("is_active",)
    search_fields = ("name", "title")
    readonly_fields = ("public_link", "embed", "numbers")
    fieldsets = (
        (None, {"fields": ("name", "is_active", "require_double_opt_in", "public_link")}),
        (
            "Page",
            {"fields": ("title", "description", "consent_text", "submit_label", "brand_color")},
        ),
        (
            "Answers",
            {
                "fields": (
                    "pending_message",
                    "success_message",
                    "confirmed_message",
                    "pending_redirect_url",
                    "success_redirect_url",
                    "confirmed_redirect_url",
                )
            },
        ),
        ("Embedding", {"fields": ("allowed_origins", "embed")}),
        ("Numbers (last 30 days)", {"fields": ("numbers",)}),
    )

    class Media:
        js = ("owlat/signup/copy.js",)

    def get_queryset(self, request: HttpRequest):
        def recent(field: str) -> Subquery:
            rows = (
                SignupFormDay.objects.filter(form=OuterRef("pk"), day__gte=_recent_days())
                .order_by()
                .values("form")
                .annotate(n=Sum(field))
                .values("n")
            )
            return Coalesce(Subquery(rows, output_field=IntegerField()), 0)

        return (
            super()
            .get_queryset(request)
            .annotate(
                _topics=Count("form_topics", distinct=True),
                _submissions=recent("submissions"),
                _confirmations=recent("confirmations"),
            )
        )

    @admin.display(description="topics", ordering="_topics")
    def _in_use(self, obj: SignupForm) -> list[dict[str, str]]:
        from owlat.inuse import form_in_use

        return form_in_use(obj.organization_id, obj.pk)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """A form a segment or active automation asks about ("joined through this form") is kept."""
        if obj is not None and self._in_use(obj):
            return False
        return super().has_delete_permission(request, obj)

    def topic_count(self, obj: SignupForm) -> int:
        return obj._topics

    @admin.display(description="submissions", ordering="_submissions")
    def submissions_30d(self, obj: SignupForm) -> int:
        return obj._submissions

    @admin.display(description="confirmations", ordering="_confirmations")
    def confirmations_30d(self, obj: SignupForm) -> int:
        return obj._confirmations

    @admin.display(description="conversion")
    def conversion_30d(self, obj: SignupForm) -> str:
        from owlat.signup.stats import conversion

        return conversion(obj._submissions, obj._confirmations)

    @admin.display(description="public page")
    def public_link(self, obj: SignupForm) -> str:
        from owlat.signup.embed import public_url

        if obj.pk is None:
            return "Save the form to get its page."
        url = public_url(obj)
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, url)

    @admin.display(description="embed snippet")
    def embed(self, obj: SignupForm) -> str:
        from owlat.signup.embed import embed_snippet

        if obj.pk is None:
            return "Save the form to get its snippet."
        return format_html(
            '<textarea id="signup-embed" readonly rows="14" style="width:100%;font-family:monospace;'
            'font-size:12px">{}</textarea>'
            '<p><button type="button" class="signup-copy" data-copy="signup-embed" style="margin-top:6px;'
            'padding:6px 12px;border-radius:6px;border:1px solid #d4d4d8">Copy snippet</button></p>'
            '<p style="font-size:12px;color:#71717a">Paste it into a page of a site listed under “allowed '
            "origins” (posts from other sites are refused). For sites that post with JavaScript: "
            "POST JSON to <code>…/subscribe.json</code> with the same field names.</p>",
            embed_snippet(obj),
        )

    @admin.display(description="submissions and confirmations")
    def numbers(self, obj: SignupForm) -> str:
        from owlat.signup.stats import REFUSALS, chart_svg, conversion, form_days, form_totals

        if obj.pk is None:
            return "–"
        totals = form_totals(obj)
        rows = [
            ("submissions", totals["submissions"]),
            ("accepted", totals["accepted"]),
            ("confirmations", totals["confirmations"]),
            ("conversion", conversion(totals["submissions"], totals["confirmations"])),
            *((f"refused: {r.replace('_', ' ')}", totals[f"refused_{r}"]) for r in REFUSALS),
        ]
        table = format_html_join(
            "", '<tr><th style="text-align:left;padding-right:16px">{}</th><td>{}</td></tr>', rows
        )
        return format_html(
            '{}<table class="signup-numbers">{}</table>',
            chart_svg(form_days(obj), colour=obj.brand_color),
            table,
        )
