"""The template picker's search (select2's JSON protocol, like Django admin's autocomplete view)."""

from __future__ import annotations

import uuid

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, JsonResponse

from owlat.admin_tenancy import get_tenancy

PAGE_SIZE = 20


def template_autocomplete_view(request: HttpRequest) -> JsonResponse:
    """`?organization=<id>&term=<text>&page=<n>` → `{"results": [{"id", "text"}], "pagination": {"more"}}`.

    Only templates of an organization the member may see (the active one; every one for platform staff).
    """
    from templates.models import EmailTemplate

    tenancy = get_tenancy(request)
    try:
        org_id = uuid.UUID(request.GET.get("organization") or str(tenancy.organization_id))
    except ValueError:
        return JsonResponse({"results": [], "pagination": {"more": False}})
    if not (tenancy.is_platform_staff or str(tenancy.organization_id) == str(org_id)):
        raise PermissionDenied
    try:
        page = max(1, int(request.GET.get("page") or 1))
    except ValueError:
        page = 1
    term = (request.GET.get("term") or "").strip()[:200].replace("\x00", "")
    qs = EmailTemplate.objects.filter(organization_id=org_id).order_by("name", "pk")
    if term:
        qs = qs.filter(name__icontains=term)
    rows = list(qs[(page - 1) * PAGE_SIZE : page * PAGE_SIZE + 1])
    return JsonResponse(
        {
            "results": [{"id": str(t.pk), "text": f"{t.name} ({t.status})"} for t in rows[:PAGE_SIZE]],
            "pagination": {"more": len(rows) > PAGE_SIZE},
        }
    )
