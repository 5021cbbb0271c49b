"""Language versions of a block document (DOM-13): `{lang: {blockId: {field: text}}}` over the translatable
fields of each block type (`templates.blocks.TRANSLATABLE`); structure and styling are shared by every language."""

from __future__ import annotations

from typing import Any

from templates.blocks import (
    MAX_RAW,
    MAX_TEXT,
    TRANSLATABLE,
    BlockError,
    check_link,
    iter_blocks,
    sanitize_rich_text,
)


def overrides_clean(value: Any, document: dict[str, Any], *, root: str = "translations") -> dict[str, Any]:
    """Language versions of a block document: `{lang: {blockId: {field: text}}}`, translatable fields of blocks
    the document has, strings only (rich text sanitized, links checked). Empty values are dropped."""
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise BlockError(root, f"{root} must map languages to block texts")
    blocks = {b["id"]: b for b in iter_blocks(document["blocks"])}
    out: dict[str, Any] = {}
    for lang, entries in value.items():
        if not isinstance(entries, dict):
            raise BlockError(f"{root}.{lang}", f"{root}.{lang} must map block ids to texts")
        cleaned: dict[str, dict[str, str]] = {}
        for block_id, fields in entries.items():
            block = blocks.get(block_id)
            if block is None:
                continue  # a block deleted since: its texts go with it
            allowed = TRANSLATABLE.get(block["type"], ())
            if not isinstance(fields, dict):
                raise BlockError(
                    f"{root}.{lang}.{block_id}", f"{root}.{lang}.{block_id} must map fields to texts"
                )
            for name, text in fields.items():
                path = f"{root}.{lang}.{block_id}.{name}"
                if name not in allowed:
                    raise BlockError(path, f"{path}: a {block['type']} block has no translatable {name}")
                if not isinstance(text, str):
                    raise BlockError(path, f"{path} must be a string")
                if not text.strip():
                    continue
                if len(text) > (MAX_RAW if block["type"] == "raw" else MAX_TEXT):
                    raise BlockError(path, f"{path} is too long")
                if name == "href":
                    try:
                        text = check_link(text) or ""
                    except ValueError as exc:
                        raise BlockError(path, f"{path} {exc}") from None
                elif block["type"] == "text":
                    text = sanitize_rich_text(text)
                cleaned.setdefault(block_id, {})[name] = text
        if cleaned:
            out[lang] = cleaned
    return out


def apply_overrides(document: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The document with one language's texts in place of the default's."""
    if not overrides:
        return document

    def swap(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        result = []
        for block in blocks:
            texts = overrides.get(block.get("id")) or {}
            new = {**block, **{k: v for k, v in texts.items() if k in TRANSLATABLE.get(block["type"], ())}}
            if block["type"] == "columns":
                new["columns"] = [{**c, "blocks": swap(c["blocks"])} for c in block["columns"]]
            result.append(new)
        return result

    return {**document, "blocks": swap(document["blocks"])}
