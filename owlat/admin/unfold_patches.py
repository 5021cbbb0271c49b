"""One performance patch to django-unfold 0.91 (pinned): its changelist row renderer (`items_for_result`)
recomputes every column header for every row (`result_headers(cl)`: sorting links, query strings) — for 100 rows
of 9 columns that is 900 header computations and most of a changelist's render time. The headers depend only on the
changelist, so they are computed once per changelist and reused for its rows. Remove when unfold caches them.
"""

from __future__ import annotations

from typing import Any

from unfold.templatetags import unfold_list

_original_result_headers = unfold_list.result_headers


def _cached_result_headers(cl: Any) -> list[Any]:
    headers = getattr(cl, "_owlat_result_headers", None)
    if headers is None:
        headers = list(_original_result_headers(cl))
        cl._owlat_result_headers = headers
    return headers


if not getattr(unfold_list.result_headers, "_owlat_cached", False):
    _cached_result_headers._owlat_cached = True  # type: ignore[attr-defined]
    unfold_list.result_headers = _cached_result_headers
