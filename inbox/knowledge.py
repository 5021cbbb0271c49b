"""Knowledge entries for context retrieval (AGT-16): PostgreSQL full-text search, a plain fallback elsewhere,
and the import of a folder of Markdown/text files."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.db import connection

from inbox import sql
from inbox.models import KnowledgeEntry

_WORD = re.compile(r"[A-Za-z0-9À-ɏ]{3,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "you",
        "your",
        "with",
        "that",
        "this",
        "have",
        "from",
        "are",
        "was",
        "were",
        "will",
        "would",
        "can",
        "could",
        "about",
        "what",
        "when",
        "where",
        "which",
        "there",
        "their",
        "they",
        "them",
        "our",
        "ours",
        "has",
        "had",
        "not",
        "but",
        "all",
        "any",
        "how",
        "who",
        "why",
        "hello",
        "dear",
        "thanks",
        "thank",
        "regards",
        "please",
        "just",
        "like",
        "also",
        "into",
    ]
)


def _keywords(text: str, limit: int = 30) -> list[str]:
    seen: list[str] = []
    for w in _WORD.findall(text or ""):
        lw = w.lower()
        if lw not in _STOP and lw not in seen:
            seen.append(lw)
        if len(seen) >= limit:
            break
    return seen


def knowledge_vector() -> Any:
    """The weighted search document of an entry (title A, content B); the GIN index is built on it."""
    from django.contrib.postgres.search import SearchVector

    return SearchVector("title", weight="A", config="simple") + SearchVector(
        "content", weight="B", config="simple"
    )


def knowledge_search(
    *, organization_id: Any, text: str, limit: int = 10, include_internal: bool = True
) -> list[tuple[KnowledgeEntry, float]]:
    """Entries of the organization ranked against `text` (any keyword may match); without `include_internal`,
    none marked internal."""
    words = _keywords(text)
    if not words:
        return []
    raw_query = " | ".join(f"{w}:*" for w in words)
    if sql.enabled() and organization_id is not None:
        # the context step's search, once per message: written out and prepared (inbox.sql); the document
        # is the index's expression with its constants in the text, so the `@@` reads `knowledge_search`
        found = sql.fetchall(
            sql.knowledge_search_sql(),
            [raw_query, sql.uuid_text(organization_id), bool(include_internal), raw_query, int(limit)],
        )
        return [(sql.build(KnowledgeEntry, row[:-1]), float(row[-1])) for row in found]
    qs = KnowledgeEntry.objects.filter(organization_id=organization_id)
    if not include_internal:
        qs = qs.filter(is_internal=False)
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchRank
        from django.db.models import F

        query = SearchQuery(raw_query, search_type="raw", config="simple")
        # `@@` against the same expression as the GIN index `knowledge_search` (inbox.models): only matching
        # rows are read and ranked, instead of every entry's vector built and ranked per message
        ranked = (
            qs.annotate(search=knowledge_vector())
            .filter(search=query)
            .annotate(rank=SearchRank(F("search"), query))
            .order_by("-rank", "title")[:limit]
        )
        return [(row, float(row.rank)) for row in ranked]
    # plain fallback (SQLite): count keyword hits in Python over the organization's entries
    scored = []
    for row in qs.only("id", "title", "content", "is_internal")[:2000]:
        hay = f"{row.title}\n{row.content}".lower()
        hits = sum(1 for w in words if w in hay)
        if hits:
            scored.append((row, hits / len(words)))
    scored.sort(key=lambda x: (-x[1], x[0].title))
    return scored[:limit]


def knowledge_import(
    *, organization_id: Any, folder: Path, progress: Callable[[Iterable], Iterable] | None = None
) -> dict[str, int]:
    """Import every `.md`/`.markdown`/`.txt` file under `folder`; re-running updates entries by source path."""
    files = sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in (".md", ".markdown", ".txt"))
    counts = {"created": 0, "updated": 0, "skipped": 0}
    for path in progress(files) if progress else files:
        try:
            content = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            counts["skipped"] += 1
            continue
        if not content:
            counts["skipped"] += 1
            continue
        title = _title(content, path)
        source = str(path.relative_to(folder))
        _, created = KnowledgeEntry.objects.update_or_create(
            organization_id=organization_id, source=source, defaults={"title": title, "content": content}
        )
        counts["created" if created else "updated"] += 1
    return counts


def _title(content: str, path: Path) -> str:
    for line in content.splitlines():
        line = line.strip()
        if line:
            return line.lstrip("#").strip()[:300] or path.stem
    return path.stem
