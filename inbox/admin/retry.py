"""The operator's recovery screens on the message admin: "Retry all…" (failed, abandoned and stuck messages),
"Process N waiting messages" (mail stored while the agent was off), and the "Retry selected messages" action —
each a confirmation page saying how many and what happens (Django admin's own pattern), then the retry service
`inbox.retry.messages_restart`. The changelist says when the agent is off and why mail stays "received"."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import re_path, reverse

from inbox import retry

SCOPES = {
    "stuck": "Retry failed and stuck messages?",
    "waiting": "Process the waiting messages?",
}


class RetryAdminMixin:
    """For `InboundMessageAdmin`: the bulk retry URLs, the action and the changelist's agent-off notice."""

    # provided by the ModelAdmin it is mixed into
    opts: Any
    admin_site: Any
    get_queryset: Any
    tenancy: Any
    actor: Any
    has_change_permission: Any

    def retry_urls(self) -> list:
        info = self.opts.app_label, self.opts.model_name
        return [
            re_path(
                r"^retry/(?P<scope>stuck|waiting)/$",
                self.admin_site.admin_view(self.retry_bulk_view),
                name="{}_{}_retry_bulk".format(*info),
            )
        ]

    def _changelist(self) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")

    def _scope_qs(self, request: HttpRequest, scope: str) -> Any:
        source = retry.needs_retry(None) if scope == "stuck" else retry.waiting(None)
        return self.get_queryset(request).filter(pk__in=source.values("pk")).order_by("received_at")

    def _confirm(self, request: HttpRequest, rows: list, *, title: str, selected: bool) -> TemplateResponse:
        organization_id = self.tenancy(request).organization_id
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.opts,
            "rows": rows[:20],
            "total": len(rows),
            "kinds": sorted(retry.kinds_count(rows).items()),
            "limit": retry.BULK_LIMIT,
            "off_reason": retry.pipeline_off_reason(organization_id) if organization_id else None,
            "selected": rows if selected else [],
            "back": self._changelist(),
        }
        return TemplateResponse(request, "admin/inbox/inboundmessage/retry_confirm.html", context)

    def _restart(self, request: HttpRequest, ids: list) -> None:
        counts = retry.messages_restart(
            message_ids=ids, organization_id=self.tenancy(request).organization_id, actor=self.actor(request)
        )
        done = counts["retried"] + counts["started"] + counts["resumed"]
        text = f"{done} message(s) sent back to the agent"
        if counts["refused"]:
            text += f"; {counts['refused']} could not be retried (open them to see why)"
        (messages.success if done else messages.warning)(request, text + ".")

    def retry_bulk_view(self, request: HttpRequest, scope: str) -> HttpResponse:
        if scope not in SCOPES:
            raise Http404("Unknown retry scope.")
        if not self.has_change_permission(request):
            raise PermissionDenied("Retrying messages needs the permission to manage the organization.")
        rows = list(self._scope_qs(request, scope)[: retry.BULK_LIMIT])
        if request.method == "POST":
            self._restart(request, [m.pk for m in rows])
            return HttpResponseRedirect(self._changelist())
        return self._confirm(request, rows, title=SCOPES[scope], selected=False)

    @admin.action(description="Retry selected messages…", permissions=["change"])
    def retry_selected(self, request: HttpRequest, queryset: Any) -> HttpResponse | None:
        rows = list(queryset.order_by("received_at")[: retry.BULK_LIMIT])
        if request.POST.get("post") == "yes":
            self._restart(request, [m.pk for m in rows])
            return None
        return self._confirm(request, rows, title="Retry the selected messages?", selected=True)

    def retry_notice(self, request: HttpRequest) -> dict[str, Any]:
        """The changelist's notice: why mail stays "received" while the agent is off, or (once on) the number
        of waiting messages and failed or stuck ones, with links to their confirmation pages."""
        organization_id = self.tenancy(request).organization_id
        info = self.opts.app_label, self.opts.model_name
        return {
            "inbox_off_reason": retry.pipeline_off_reason(organization_id) if organization_id else None,
            "inbox_waiting": self._scope_qs(request, "waiting").count(),
            "inbox_needs_retry": self._scope_qs(request, "stuck").count(),
            "inbox_waiting_url": reverse("admin:{}_{}_retry_bulk".format(*info), args=["waiting"]),
            "inbox_retry_url": reverse("admin:{}_{}_retry_bulk".format(*info), args=["stuck"]),
        }
