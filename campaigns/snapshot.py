"""The content snapshot: what a campaign sends, frozen at its content scan.

At the scan the campaign's content is rendered for every variant (A, and B of an A/B test: B's subject or B's
template) and every language its template has content for (the default language and each translation with
HTML), without personal data: the pre-personalisation sources (subject, preheader, CSS-inlined HTML, text) with
their placeholders (`{{firstName}}`, `{{unsubscribeUrl}}` …) still in them. The scan covers every entry; the
entries that passed are stored (`CampaignContentSnapshot`) in the orchestrator's transaction. From then on the
walker's subjects, delivery's composer (through `register_campaign_content`) and the archive read only the
snapshot, so an edit of the template during the send changes nothing already scanned; each recipient's
personalisation is still applied at send, from the frozen sources.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from campaigns.models import Campaign, CampaignContentSnapshot
from templates.rendering import ContentSources, PreparedTemplate, prepared_from_sources, template_sources


@dataclass(frozen=True)
class SnapshotEntry:
    variant: str
    template_id: str
    is_default_language: bool
    sources: ContentSources


def _variant_contents(campaign: Campaign) -> list[tuple[str, Any, str | None]]:
    """(variant, template, subject override) for every variant the campaign sends."""
    from templates.models import EmailTemplate

    out: list[tuple[str, Any, str | None]] = [("A", campaign.email_template, campaign.subject or None)]
    cfg = campaign.ab_config() if campaign.is_ab_test else {}
    if cfg.get("testType") == "subject" and cfg.get("variantBSubject"):
        out.append(("B", campaign.email_template, cfg["variantBSubject"]))
    elif cfg.get("testType") == "content" and cfg.get("variantBTemplateId"):
        template_b = EmailTemplate.objects.filter(
            pk=cfg["variantBTemplateId"], organization_id=campaign.organization_id
        ).first()
        if template_b is not None:
            out.append(("B", template_b, campaign.subject or None))
    return out


def _languages(template: Any) -> list[str]:
    default = template.default_language or "en"
    extra = [
        lang
        for lang, entry in sorted((template.html_translations or {}).items())
        if isinstance(entry, dict) and (entry.get("htmlContent") or "").strip() and lang != default
    ]
    return [default, *extra]


def snapshot_build(campaign: Campaign) -> list[SnapshotEntry]:
    """Every (variant, language) the campaign can send, rendered from the templates as they are now."""
    entries: list[SnapshotEntry] = []
    for variant, template, subject_override in _variant_contents(campaign):
        for index, language in enumerate(_languages(template)):
            sources = template_sources(template, language)
            if subject_override:
                sources = ContentSources(
                    language=sources.language,
                    subject=subject_override,
                    preheader=sources.preheader,
                    html=sources.html,
                    text=sources.text,
                )
            entries.append(SnapshotEntry(variant, str(template.pk), index == 0, sources))
    return entries


def entries_fingerprint(entries: list[SnapshotEntry]) -> str:
    """CMP-12 over the whole snapshot: a reviewer's approval holds for exactly this content."""
    from campaigns.scanner import content_fingerprint

    if len(entries) == 1:  # the single-content fingerprint of (subject, HTML)
        rendered = entry_rendered(entries[0])
        return content_fingerprint(rendered[0], rendered[1])
    digest = hashlib.sha256()
    for entry in entries:
        subject, html = entry_rendered(entry)
        digest.update(f"{entry.variant}/{entry.sources.language}\0".encode())
        digest.update(content_fingerprint(subject, html).encode())
    return digest.hexdigest()


def entry_rendered(entry: SnapshotEntry) -> tuple[str, str]:
    """The entry's subject and HTML without personal data (placeholders resolved to their fallbacks)."""
    from templates.rendering import render_prepared

    rendered = render_prepared(prepared_from_sources(entry.sources), {})
    return rendered.subject, rendered.html


def snapshot_store(campaign: Campaign, entries: list[SnapshotEntry]) -> None:
    """Replace the campaign's snapshot (inside the orchestrator's transaction, under the campaign's lock)."""
    CampaignContentSnapshot.objects.filter(campaign_id=campaign.pk).delete()
    CampaignContentSnapshot.objects.bulk_create(
        [
            CampaignContentSnapshot(
                organization_id=campaign.organization_id,
                campaign_id=campaign.pk,
                variant=e.variant,
                language=e.sources.language,
                is_default_language=e.is_default_language,
                template_id=e.template_id,
                subject=e.sources.subject,
                preheader=e.sources.preheader,
                html=e.sources.html,
                text=e.sources.text,
            )
            for e in entries
        ]
    )


# --- reading the snapshot at send ------------------------------------------------------------------------

#: how long a process keeps a campaign's snapshot; a snapshot changes only when a new send of the campaign
#: passes its scan, which creates its rows after that
_TTL_SECONDS = 30.0
_cache: dict[str, tuple[float, dict[tuple[str, str], PreparedTemplate], dict[str, str]]] = {}
_cache_lock = threading.Lock()


def _load(campaign_id: str) -> tuple[dict[tuple[str, str], PreparedTemplate], dict[str, str]]:
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(campaign_id)
        if hit is not None and now - hit[0] < _TTL_SECONDS:
            return hit[1], hit[2]
    prepared: dict[tuple[str, str], PreparedTemplate] = {}
    defaults: dict[str, str] = {}
    for row in CampaignContentSnapshot.objects.filter(campaign_id=campaign_id):
        sources = ContentSources(row.language, row.subject, row.preheader, row.html, row.text)
        prepared[(row.variant, row.language.lower())] = prepared_from_sources(sources)
        if row.is_default_language:
            defaults[row.variant] = row.language.lower()
    with _cache_lock:
        _cache[campaign_id] = (now, prepared, defaults)
        if len(_cache) > 256:
            _cache.pop(next(iter(_cache)))
    return prepared, defaults


def snapshot_prepared(campaign_id: Any, variant: str | None, language: str | None) -> PreparedTemplate | None:
    """The frozen content a row of `campaign_id` is composed from: its variant (A when none) in its language,
    else that language's base (`de` for `de-AT`), else the variant's default language. None when the campaign
    has no snapshot (rows queued before snapshots existed)."""
    prepared, defaults = _load(str(campaign_id))
    if not prepared:
        return None
    v = variant if variant in ("A", "B") else "A"
    if v not in defaults:
        v = "A"
    lang = (language or "").lower()
    for candidate in (lang, lang.split("-")[0], defaults.get(v, "")):
        hit = prepared.get((v, candidate))
        if hit is not None:
            return hit
    return None


def snapshot_forget(campaign_id: Any) -> None:
    """Drop this process's copy (the orchestrator calls it after storing a new snapshot)."""
    with _cache_lock:
        _cache.pop(str(campaign_id), None)
