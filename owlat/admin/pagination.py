"""Changelist pagination for big tables.

`EstimatedCountPaginator` answers `count` from PostgreSQL's planner estimate (`EXPLAIN`, the same statistics as
`pg_class.reltuples`, but for the list's own query, so per organization) when the list is unfiltered and the
estimate is large, shown as "about N"; a small unfiltered list gets the exact `COUNT(*)`. A filtered or searched
list is counted exactly up to `COUNT_CAP` rows (`SELECT count(*) FROM (… LIMIT cap + 1)`), so a filter matching
half of a big table costs no more than the cap: beyond it the total reads "more than N".
`ModelAdmin.paginator = EstimatedCountPaginator` plus `get_paginator` from `EstimatedCountMixin` (which tells the
paginator whether the operator filtered or searched) switch a changelist to it.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from django.db import connections
from django.http import HttpRequest
from django.utils.functional import cached_property

# Below this many rows (estimated) an exact count is cheap enough.
EXACT_BELOW = 20_000
# A filtered list is counted exactly up to this many rows.
COUNT_CAP = 10_000
# Query parameters that do not narrow the list (page, ordering, the error flag, the popup/selection markers).
NOT_FILTERS = frozenset({"p", "o", "e", "_to_field", "_popup", "_changelist_filters"})


def planner_estimate(queryset: Any) -> int | None:
    """The planner's row estimate for `queryset` (PostgreSQL), or None where there is none (SQLite)."""
    if connections[queryset.db].vendor != "postgresql":
        return None
    plan = queryset.order_by().values("pk").explain(format="json")
    try:
        return int(json.loads(plan)[0]["Plan"]["Plan Rows"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


class EstimatedCountPaginator(Paginator):
    template_name = "admin/owlat/pagination_estimated.html"

    def __init__(self, *args: Any, filtered: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filtered = filtered
        self.estimated = False  # the count is not exact
        self.capped = False  # ... and is a lower bound (a filtered list with more than COUNT_CAP rows)

    @cached_property
    def count(self) -> int:
        if not self.filtered:
            estimate = planner_estimate(self.object_list)
            if estimate is not None and estimate >= EXACT_BELOW:
                self.estimated = True
                return estimate
            return super().count
        counted = self.object_list.order_by().values("pk")[: COUNT_CAP + 1].count()
        if counted > COUNT_CAP:
            self.estimated = self.capped = True
            return COUNT_CAP
        return counted

    @property
    def count_display(self) -> str:
        return f"{self.count:,}"

    def validate_number(self, number: Any) -> int:
        if not self.estimated:
            return super().validate_number(number)
        # An estimated total may be a little above the real one: a page past the end is empty, not an error.
        try:
            value = int(number)
        except (TypeError, ValueError) as exc:
            raise PageNotAnInteger("That page number is not an integer") from exc
        if value < 1:
            raise EmptyPage("That page number is less than 1")
        return value


def is_filtered(request: HttpRequest) -> bool:
    return any(key not in NOT_FILTERS for key in request.GET)


class EstimatedCountMixin:
    """ModelAdmin mixin: big unfiltered changelists show an estimated total instead of counting every row."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False

    def get_paginator(
        self,
        request: HttpRequest,
        queryset: Any,
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page=True,
    ) -> Paginator:
        return self.paginator(
            queryset, per_page, orphans, allow_empty_first_page, filtered=is_filtered(request)
        )

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)  # type: ignore[misc]
        if not is_filtered(request):
            # No "5 results (Show all)" over an unfiltered list: the total is the list's own count.
            changelist.full_result_count = changelist.result_count
        return changelist
