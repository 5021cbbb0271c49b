"""Public pages of the campaigns app: the archive (CMP-37), no login."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from campaigns.archive import archive_lookup


@require_GET
def archive_view(request: HttpRequest) -> HttpResponse:
    campaign = archive_lookup(request.GET.get("token", ""))
    if campaign is None:
        raise Http404("Not found")
    return render(
        request,
        "campaigns/archive.html",
        {
            "subject": campaign.archive_subject or "",
            # the organization's own snapshot HTML, shown as it was sent (without personal data)
            "html": mark_safe(campaign.archive_html_content or ""),
        },
    )
