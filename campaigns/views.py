"""Public pages of the campaigns app: the archive (CMP-37), no login.

The archive is the organization's own HTML: it is served as a sandboxed document (owlat.sandbox), and the page
is cookieless (registered in `CampaignsConfig.ready`): it neither reads nor sets a cookie."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from campaigns.archive import archive_lookup
from owlat.sandbox import sandboxed_response


@require_GET
def archive_view(request: HttpRequest) -> HttpResponse:
    campaign = archive_lookup(request.GET.get("token", ""))
    if campaign is None:
        raise Http404("Not found")
    # rendered without the request: no context processor looks at the session or the user
    html = render_to_string(
        "campaigns/archive.html",
        {"subject": campaign.archive_subject or "", "html": campaign.archive_html_content or ""},
    )
    return sandboxed_response(html)
