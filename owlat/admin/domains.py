"""Sending domains (DOM-12): add a domain, see each DNS record to publish with its current state, "Check
now", generate/rotate the DKIM key, and — platform staff only, audited — mark a domain verified without DNS for
local setups. The status is read-only; every change goes through `owlat.domains` (DOM-20)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse

from owlat.admin_tenancy import TenantModelAdmin, is_platform_staff
from owlat.models import Domain

STATE_LABELS = {
    "ok": "Published",
    "missing": "Missing",
    "wrong": "Wrong value",
    "error": "DNS error",
    None: "Not checked yet",
}


class DomainForm(forms.ModelForm):
    class Meta:
        model = Domain
        fields = ("organization", "domain", "provider_type")
        help_texts = {
            "domain": "The domain of your From addresses, e.g. mail.example.com. After saving, publish the DNS "
            "records shown on the next page and press “Check now”.",
            "provider_type": "Optional: the email provider this domain sends through (informational).",
        }

    def clean_domain(self) -> str:
        from owlat.domains.records import valid_domain_name

        value = (self.cleaned_data.get("domain") or "").strip().rstrip(".").lower()
        try:
            value = value.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValidationError("Enter a domain name such as mail.example.com.") from None
        if not valid_domain_name(value):
            raise ValidationError("Enter a domain name such as mail.example.com (no @, no http://).")
        return value

    def clean(self) -> dict[str, Any]:
        from owlat.domains.verification import claimed_message, domain_claimed_elsewhere

        data = super().clean()
        organization = data.get("organization")
        organization_id = organization.pk if organization is not None else self.instance.organization_id
        name = data.get("domain")
        if (
            name
            and organization_id
            and domain_claimed_elsewhere(domain=name, organization_id=organization_id)
        ):
            self.add_error("domain", claimed_message(name))
        return data


@admin.register(Domain)
class DomainAdmin(TenantModelAdmin):
    form = DomainForm
    manage_permission = "settings:manage"
    change_form_template = "admin/owlat/domain/change_form.html"
    list_display = ("domain", "status", "verification", "last_verified_at", "last_checked_at", "created_at")
    list_filter = ("status",)
    search_fields = ("domain",)
    readonly_fields = ("status", "last_verified_at", "last_checked_at", "created_at")
    actions = ("check_now",)

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = ["organization", "domain", "provider_type"]
        return fields if obj is None else [*fields, *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(super().get_readonly_fields(request, obj))
        return fields if obj is None else [*fields, "domain"]  # the records are derived from the name

    @admin.display(description="verification")
    def verification(self, obj: Domain) -> str:
        from owlat.domains.verification import is_stale

        if obj.verification_overridden_at:
            return "overridden by staff" + (", without DKIM" if obj.dkim_waived_at else "")
        if is_stale(obj):
            return "stale (older than 24 h)"
        return "–"

    def save_model(self, request: HttpRequest, obj: Domain, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            from owlat.domains.verification import domain_register

            domain_register(obj, actor=self.actor(request))

    # -- the change page: records, keys, buttons --------------------------------------------------------------
    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        extra_context = dict(extra_context or {})
        obj = self.get_object(request, object_id)
        if obj is not None and self.has_view_permission(request, obj):
            extra_context.update(self._records_context(request, obj))
        return super().change_view(request, object_id, form_url, extra_context)

    def _records_context(self, request: HttpRequest, obj: Domain) -> dict[str, Any]:
        from owlat.domains.keys import live_keys, signing_key
        from owlat.domains.verification import stale_warning

        rows = []
        records = obj.dns_records if isinstance(obj.dns_records, list) else []
        for record in records:
            check = (obj.dns_checks or {}).get(record["key"]) or {}
            rows.append(
                {
                    **record,
                    "state": check.get("state"),
                    "state_label": STATE_LABELS.get(check.get("state"), check.get("state")),
                    "detail": check.get("detail", ""),
                    "found": check.get("found") or [],
                }
            )
        from owlat.domains.signing import UNSIGNABLE, dkim_warning, domain_plan, unsignable_policy

        keys = live_keys(obj)
        current = signing_key(keys)
        plan = domain_plan(obj) if obj.status == "verified" else None
        problem = ""
        if plan is not None and plan.action == UNSIGNABLE and unsignable_policy() == "refuse":
            problem = f"Mail from this domain is refused: {plan.reason}"
        return {
            "domain_dkim_problem": problem,
            "domain_dkim_warning": dkim_warning(obj),
            "domain_records": rows,
            "domain_keys": [
                {"key": k, "signing": current is not None and k.pk == current.pk} for k in obj.dkim_keys.all()
            ],
            "domain_stale_warning": stale_warning(obj),
            "domain_can_override": is_platform_staff(request.user) and obj.status != "verified",
            "domain_rotating": len(keys) > 1,
        }

    def get_urls(self):
        info = self.model._meta.app_label, self.model._meta.model_name
        return [
            path(
                "<path:object_id>/check/",
                self.admin_site.admin_view(self.check_view),
                name="{}_{}_check".format(*info),
            ),
            path(
                "<path:object_id>/rotate-dkim/",
                self.admin_site.admin_view(self.rotate_view),
                name="{}_{}_rotate_dkim".format(*info),
            ),
            path(
                "<path:object_id>/override/",
                self.admin_site.admin_view(self.override_view),
                name="{}_{}_override".format(*info),
            ),
            *super().get_urls(),
        ]

    def _post_object(self, request: HttpRequest, object_id: str) -> Domain:
        obj = self.get_object(request, object_id)
        if obj is None or not self.has_view_permission(request, obj):
            raise Http404("Domain not found")
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        return obj

    def _back(self, obj: Domain) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:owlat_domain_change", args=[obj.pk]))

    def _report(self, request: HttpRequest, obj: Domain, outcome: Any) -> None:
        from owlat.domains.verification import stale_warning

        obj.refresh_from_db()
        if not outcome.ok:
            self.message_user(request, f"{obj.domain}: {outcome.message}", messages.ERROR)
        elif obj.status == "verified":
            self.message_user(request, f"{obj.domain} is verified.", messages.SUCCESS)
        else:
            problems = [
                f"{key}: {check.get('detail')}"
                for key, check in (obj.dns_checks or {}).items()
                if check.get("state") != "ok"
            ]
            self.message_user(
                request,
                f"{obj.domain} is {obj.status}. Publish the records marked below, then check again. "
                + " ".join(problems),
                messages.WARNING,
            )
        warning = stale_warning(obj)
        if warning:
            self.message_user(request, warning, messages.WARNING)

    def check_view(self, request: HttpRequest, object_id: str):
        """The "Check now" button: query DNS for every record and update the status."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        from owlat.domains.verification import domain_check

        obj = self._post_object(request, object_id)
        self._report(request, obj, domain_check(obj, actor=self.actor(request)))
        return self._back(obj)

    def rotate_view(self, request: HttpRequest, object_id: str):
        """Generate a new DKIM key (the first one, or a rotation: the current key keeps signing until the new
        selector's record verifies)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        from owlat.domains.verification import domain_rotate_dkim

        obj = self._post_object(request, object_id)
        outcome, selector = domain_rotate_dkim(obj, actor=self.actor(request))
        if outcome.ok:
            self.message_user(
                request,
                f"New DKIM key {selector} generated. Publish its TXT record below and press “Check now”; the "
                "current key keeps signing until the new record is found.",
                messages.SUCCESS,
            )
        else:
            self.message_user(request, f"{obj.domain}: {outcome.message}", messages.ERROR)
        return self._back(obj)

    def override_view(self, request: HttpRequest, object_id: str):
        """Platform staff only: mark verified without DNS (local setups); audited with the reason given."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        from owlat.domains.verification import domain_override

        obj = self._post_object(request, object_id)
        if not is_platform_staff(request.user):
            raise PermissionDenied("Only platform staff can override domain verification.")
        reason = (request.POST.get("reason") or "").strip()
        if not reason:
            self.message_user(
                request,
                "Give a reason for the override (e.g. “local test setup without public DNS”).",
                messages.ERROR,
            )
            return self._back(obj)
        dkim = "trust" if request.POST.get("dkim") == "trust" else "check"
        outcome = domain_override(obj, actor=self.actor(request), reason=reason[:500], dkim=dkim)
        if outcome.ok:
            obj.refresh_from_db()
            if obj.dkim_waived_at:
                self.message_user(
                    request,
                    f"{obj.domain} marked verified by override (audited), without DKIM: its key is not "
                    "published, so its mail goes out unsigned until a check finds the record.",
                    messages.WARNING,
                )
            else:
                self.message_user(
                    request,
                    f"{obj.domain} marked verified by override (audited); it signs with DKIM.",
                    messages.SUCCESS,
                )
        else:
            self.message_user(request, f"{obj.domain}: {outcome.message}", messages.ERROR)
        return self._back(obj)

    @admin.action(description="Check the DNS records of the selected domains now", permissions=["change"])
    def check_now(self, request: HttpRequest, queryset: Any) -> None:
        from owlat.domains.verification import domain_check

        for obj in queryset:
            self._report(request, obj, domain_check(obj, actor=self.actor(request)))
