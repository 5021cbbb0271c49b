"""Pluggable "related files" retrievers for context retrieval (AGT-16 [optional]).

AGT-16 adds to the briefing up to 3 files related to the contact "from pluggable retrievers … (return nothing
when the subsystem is absent)". Owlat has no file or document store, so nothing registers one and the step finds
no files (`coverage.files` false); an app that stores files registers `retrieve(*, organization_id, contact_id,
text, limit) -> list[RelatedFile]` here from its `AppConfig.ready()`. A retriever that raises is skipped (logged),
so a broken subsystem degrades to "no files" instead of failing the step."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

MAX_FILES = 3


@dataclass(frozen=True)
class RelatedFile:
    id: str
    title: str
    excerpt: str


FileRetriever = Callable[..., list[RelatedFile]]
_FILE_RETRIEVERS: list[FileRetriever] = []


def register_file_retriever(retriever: FileRetriever) -> None:
    if retriever not in _FILE_RETRIEVERS:
        _FILE_RETRIEVERS.append(retriever)


def unregister_file_retriever(retriever: FileRetriever) -> None:
    if retriever in _FILE_RETRIEVERS:
        _FILE_RETRIEVERS.remove(retriever)


def related_files(
    *, organization_id: Any, contact_id: Any, text: str, limit: int = MAX_FILES
) -> list[RelatedFile]:
    """Up to `limit` files from the registered retrievers, in registration order (none registered: [])."""
    found: list[RelatedFile] = []
    for retriever in list(_FILE_RETRIEVERS):
        if len(found) >= limit:
            break
        try:
            found.extend(
                retriever(
                    organization_id=organization_id,
                    contact_id=contact_id,
                    text=text,
                    limit=limit - len(found),
                )
            )
        except Exception:
            logger.exception("related-files retriever %r failed; continuing without its files", retriever)
    return found[:limit]
