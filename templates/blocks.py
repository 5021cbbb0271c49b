"""The block document of an email template: a versioned, validated schema (pydantic) for `EmailTemplate.content`.

A document is `{"version": 1, "settings": {...}, "blocks": [...]}`; each block has an `id` (stable across edits,
the key of its language overrides), a `type` and that type's settings. Columns hold 2–3 columns of content blocks
(no nested columns). Rich text (`text` blocks) is sanitized to a small allowlist with nh3 (ammonia); raw blocks
keep their HTML as written (sent as the power user wrote it, previewed only sandboxed).

`document_clean(value)` returns the normalized document or raises `BlockError` naming the path
(`content.blocks[2].href`), the block (`button`, its id) and what to do. Language versions are text overrides:
`{lang: {blockId: {field: text}}}` over the translatable fields of each type (`TRANSLATABLE`), cleaned by
`templates.block_translations.overrides_clean`; structure and styling are shared by every language (DOM-13).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import nh3
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

SCHEMA_VERSION = 1
MAX_BLOCKS = 200
MAX_TEXT = 20_000
MAX_RAW = 500_000

# a #rrggbb colour (the pickers' format) — no CSS expression can hide in one
Color = Annotated[str, Field(pattern=r"^#[0-9a-fA-F]{6}$", examples=["#1f2937"])]
Align = Literal["left", "center", "right"]
BlockId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,40}$", examples=["b1"])]
# An absolute http(s) or mailto/tel link, or one made of variables (`{{unsubscribeUrl}}`).
# Written for both regex dialects alike (Python's `re` here, ECMA in the API document's `pattern`): explicit
# control-character ranges rather than `\s` (the two disagree on \x1c-\x1f), `fullmatch` rather than `$` (Python's
# allows a trailing newline).
_URL_CHAR = r"[^\x00-\x20\x7f<>\"']"
LINK_PATTERN = (
    rf"^(https?://{_URL_CHAR}{{1,2000}}|mailto:{_URL_CHAR}{{1,500}}|tel:[+0-9() .-]{{3,40}}"
    r"|\{\{[^{}<>\"]{1,200}\}\})$"
)
LINK_RE = re.compile(LINK_PATTERN.removeprefix("^").removesuffix("$"))
# The document states the link pattern; the validators enforce exactly it (no trimming: what the document calls
# invalid is refused, what it allows is accepted).
Link = Annotated[
    str,
    Field(
        max_length=2000,
        description="https:// (or http://, mailto:, tel:) URL, or a variable such as {{unsubscribeUrl}}",
        json_schema_extra={"pattern": LINK_PATTERN},
    ),
]
OptionalLink = Annotated[
    str,
    Field(
        max_length=2000,
        description="https:// (or http://, mailto:, tel:) URL, a variable such as {{unsubscribeUrl}}, or empty",
        json_schema_extra={"pattern": f"^$|{LINK_PATTERN}"},
    ),
]
IMAGE_SRC_PATTERN = rf"^https?://{_URL_CHAR}+$"
IMAGE_SRC_RE = re.compile(IMAGE_SRC_PATTERN.removeprefix("^").removesuffix("$"))
FONT_FAMILIES = {
    "Arial": "Arial, Helvetica, sans-serif",
    "Helvetica": "Helvetica, Arial, sans-serif",
    "Georgia": "Georgia, 'Times New Roman', serif",
    "Verdana": "Verdana, Geneva, sans-serif",
    "Trebuchet MS": "'Trebuchet MS', Arial, sans-serif",
    "Courier New": "'Courier New', Courier, monospace",
}
SOCIAL_NETWORKS = ("facebook", "instagram", "linkedin", "x", "youtube", "github", "pinterest", "web")

RICH_TEXT_TAGS = {"p", "div", "br", "strong", "b", "em", "i", "u", "s", "a", "ul", "ol", "li", "blockquote"}


def check_link(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not LINK_RE.fullmatch(value):
        raise ValueError(
            "must be an https:// address (or http://, mailto:, tel:, or a variable such as {{unsubscribeUrl}})"
        )
    return value


def sanitize_rich_text(markup: str) -> str:
    """Rich text as the editor writes it, reduced to the allowlist: formatting, lists, quotes and links."""
    return nh3.clean(
        markup,
        tags=RICH_TEXT_TAGS,
        attributes={"a": {"href", "title"}},
        url_schemes={"http", "https", "mailto", "tel"},
        link_rel=None,
        strip_comments=True,
    )


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON types as written: no `false` for 0


class BlockPadding(_Model):
    """Space around the block's content, in pixels."""

    top: int = Field(10, ge=0, le=120)
    right: int = Field(25, ge=0, le=120)
    bottom: int = Field(10, ge=0, le=120)
    left: int = Field(25, ge=0, le=120)


class _Block(_Model):
    id: BlockId
    padding: BlockPadding = Field(default_factory=BlockPadding)
    backgroundColor: Color | None = None


class HeadingBlock(_Block):
    type: Literal["heading"]
    text: str = Field(min_length=1, max_length=500)
    level: Literal[1, 2, 3] = 1
    align: Align = "left"
    color: Color | None = None


class TextBlock(_Block):
    type: Literal["text"]
    html: str = Field(max_length=MAX_TEXT, description="Rich text: bold, italic, links, lists (sanitized)")
    align: Align = "left"
    color: Color | None = None
    fontSize: int = Field(16, ge=10, le=32)

    @field_validator("html")
    @classmethod
    def _sanitize(cls, value: str) -> str:
        return sanitize_rich_text(value)


class ImageBlock(_Block):
    type: Literal["image"]
    imageId: str | None = Field(None, max_length=40, description="An image of the library (its id)")
    src: str = Field(
        "",
        max_length=2000,
        description="The image's https:// address (empty: not chosen yet)",
        json_schema_extra={"pattern": f"^$|{IMAGE_SRC_PATTERN}"},
    )
    alt: str = Field("", max_length=500)
    href: OptionalLink | None = None
    width: int | None = Field(None, ge=16, le=600, description="Pixels; empty: the full width")
    height: int | None = Field(None, ge=1, le=4000, description="Pixels of the image at `width`")
    align: Align = "center"

    @field_validator("src")
    @classmethod
    def _src(cls, value: str) -> str:
        if value and not IMAGE_SRC_RE.fullmatch(value):
            raise ValueError("must be an https:// image address (pick one from the image library)")
        return value

    @field_validator("href")
    @classmethod
    def _href(cls, value: str | None) -> str | None:
        return check_link(value)


class ButtonBlock(_Block):
    type: Literal["button"]
    label: str = Field(min_length=1, max_length=200)
    href: Link
    align: Align = "center"
    buttonColor: Color = "#2563eb"
    textColor: Color = "#ffffff"
    borderRadius: int = Field(6, ge=0, le=40)

    @field_validator("href")
    @classmethod
    def _href(cls, value: str) -> str:
        checked = check_link(value)
        if checked is None:
            raise ValueError("is required: the address the button opens")
        return checked


class DividerBlock(_Block):
    type: Literal["divider"]
    color: Color = "#e5e7eb"
    thickness: int = Field(1, ge=1, le=10)


class SpacerBlock(_Block):
    type: Literal["spacer"]
    height: int = Field(24, ge=4, le=200)


class SocialLinkItem(_Model):
    network: Literal[SOCIAL_NETWORKS]  # type: ignore[valid-type]
    url: Link

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        checked = check_link(value)
        if checked is None:
            raise ValueError("is required")
        return checked


class SocialBlock(_Block):
    type: Literal["social"]
    links: list[SocialLinkItem] = Field(min_length=1, max_length=12)
    align: Align = "center"


class FooterBlock(_Block):
    type: Literal["footer"]
    text: str = Field("", max_length=2000, description="A line above the links, e.g. why they get this mail")
    showUnsubscribe: bool = True
    showPreferences: bool = True
    showAddress: bool = Field(True, description="The organization's postal address")
    unsubscribeText: str = Field("Unsubscribe", min_length=1, max_length=100)
    preferencesText: str = Field("Manage preferences", min_length=1, max_length=100)
    align: Align = "center"
    color: Color = "#6b7280"


class RawBlock(_Block):
    type: Literal["raw"]
    html: str = Field(max_length=MAX_RAW, description="HTML sent as written (power users)")


ContentBlock = Annotated[
    HeadingBlock
    | TextBlock
    | ImageBlock
    | ButtonBlock
    | DividerBlock
    | SpacerBlock
    | SocialBlock
    | FooterBlock
    | RawBlock,
    Field(discriminator="type"),
]


class BlockColumn(_Model):
    blocks: list[ContentBlock] = Field(default_factory=list, max_length=50)


class ColumnsBlock(_Block):
    type: Literal["columns"]
    columns: list[BlockColumn] = Field(min_length=2, max_length=3)


Block = Annotated[
    HeadingBlock
    | TextBlock
    | ImageBlock
    | ButtonBlock
    | DividerBlock
    | SpacerBlock
    | ColumnsBlock
    | SocialBlock
    | FooterBlock
    | RawBlock,
    Field(discriminator="type"),
]


class BlockDocumentSettings(_Model):
    backgroundColor: Color = "#f4f4f5"
    contentBackgroundColor: Color = "#ffffff"
    textColor: Color = "#1f2937"
    linkColor: Color = "#2563eb"
    fontFamily: Literal[tuple(FONT_FAMILIES)] = "Arial"  # type: ignore[valid-type]


class BlockDocument(_Model):
    """An email built from blocks (schema version 1)."""

    version: Literal[1] = Field(description="The schema version: 1")
    settings: BlockDocumentSettings = Field(default_factory=BlockDocumentSettings)
    blocks: list[Block] = Field(max_length=MAX_BLOCKS)


BLOCK_TYPES = (
    "heading",
    "text",
    "image",
    "button",
    "divider",
    "spacer",
    "columns",
    "social",
    "footer",
    "raw",
)
# the fields a language version may override, per block type (text only: styling is shared, DOM-13)
TRANSLATABLE: dict[str, tuple[str, ...]] = {
    "heading": ("text",),
    "text": ("html",),
    "image": ("alt", "href"),
    "button": ("label", "href"),
    "footer": ("text", "unsubscribeText", "preferencesText"),
    "raw": ("html",),
}

_document_adapter = TypeAdapter(BlockDocument)


class BlockError(ValueError):
    """An invalid document: `field` is the path (`content.blocks[2].href`), `message` names the block."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def is_block_document(value: Any) -> bool:
    """Whether a stored `content` is a block document (anything else is legacy editor JSON, never rendered)."""
    return isinstance(value, dict) and value.get("version") == SCHEMA_VERSION and "blocks" in value


def _strip_tags(loc: tuple) -> tuple:
    """pydantic's location without the union tags it puts after each block index (`blocks.2.button.href`)."""
    out: list[Any] = []
    for i, key in enumerate(loc):
        if i >= 2 and loc[i - 2] == "blocks" and isinstance(loc[i - 1], int) and key in BLOCK_TYPES:
            continue
        out.append(key)
    return tuple(out)


def _block_at(value: Any, loc: tuple) -> tuple[str, str]:
    """The `blocks[i]` / `blocks[i].columns[j].blocks[k]` path of the innermost block an error is in, and its
    label (`button block “b3”`)."""
    node: Any = value
    path = label = ""
    i = 0
    while i + 1 < len(loc) and isinstance(loc[i + 1], int) and loc[i] in ("blocks", "columns"):
        key, index = loc[i], loc[i + 1]
        items = node.get(key) if isinstance(node, dict) else None
        node = items[index] if isinstance(items, list) and index < len(items) else None
        path += f".{key}[{index}]" if path else f"{key}[{index}]"
        if key == "blocks" and isinstance(node, dict):
            kind, ident = node.get("type"), node.get("id")
            label = f"{kind} block" if isinstance(kind, str) and kind in BLOCK_TYPES else "block"
            if isinstance(ident, str) and ident:
                label += f" “{ident[:40]}”"
            last_block = path
        i += 2
    if label:
        path = last_block
    return path, label


def _error(value: Any, err: dict[str, Any], root: str) -> BlockError:
    loc = _strip_tags(tuple(err.get("loc") or ()))
    block_path, label = _block_at(value, loc)
    field = root + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in loc)
    leaf = next((str(k) for k in reversed(loc) if isinstance(k, str)), root)
    kind = err.get("type")
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        text = f"type must be one of {', '.join(BLOCK_TYPES)}"
        field = f"{root}.{block_path}.type" if block_path else f"{root}.type"
    elif kind == "extra_forbidden":
        text = f"{leaf} is not a setting of this block"
    elif kind == "missing":
        text = f"{leaf} is required"
    else:
        text = f"{leaf} {_message(err)}"
    where = f"{root}.{block_path} ({label})" if block_path else root
    return BlockError(field, f"{where}: {text}")


def _message(err: dict[str, Any]) -> str:
    msg = str(err.get("msg") or "is invalid")
    msg = msg.removeprefix("Value error, ")
    if msg.startswith("String should match pattern '^#"):
        return "must be a colour like #1f2937"
    if msg.startswith("String should match pattern '^[A-Za-z0-9_-]"):
        return "must be 1–40 letters, digits, - or _"
    for prefix, said in (
        ("Input should be a valid ", "must be a "),
        ("Input should be ", "must be "),
        ("String should have at least 1 character", "must not be empty"),
        ("String should have ", "must have "),
        ("List should have ", "must have "),
    ):
        if msg.startswith(prefix):
            text = said + re.sub(r", (unable to|got) .*$", "", msg[len(prefix) :])
            return re.sub(r"^must be a (?=[aeiou])", "must be an ", text)
    return msg


def document_clean(value: Any, *, root: str = "content") -> dict[str, Any]:
    """The normalized document (defaults filled in, rich text sanitized), or `BlockError` naming the path."""
    if not isinstance(value, dict):
        raise BlockError(root, f"{root} must be an object with version and blocks")
    if value.get("version") != SCHEMA_VERSION:
        raise BlockError(f"{root}.version", f"{root}.version must be {SCHEMA_VERSION}")
    try:
        document = _document_adapter.validate_python(value)
    except ValidationError as exc:
        raise _error(value, exc.errors()[0], root) from None
    seen: set[str] = set()
    for block in iter_blocks(document.blocks):
        if block.id in seen:
            raise BlockError(
                f"{root}.blocks", f"{root}: two blocks have the id “{block.id}”; ids must be unique"
            )
        seen.add(block.id)
    return document.model_dump(mode="json")


def iter_blocks(blocks: list[Any]) -> Any:
    """Every block, those inside columns included (models or dicts)."""
    for block in blocks:
        yield block
        columns = block.get("columns") if isinstance(block, dict) else getattr(block, "columns", None)
        for column in columns or ():
            inner = column.get("blocks") if isinstance(column, dict) else column.blocks
            yield from iter_blocks(inner or [])


def _openapi_30(node: Any) -> Any:
    """pydantic's JSON Schema in OpenAPI 3.0's dialect: `nullable` for `anyOf [X, null]`, `enum` for `const`,
    one `example`, no titles."""
    if isinstance(node, list):
        return [_openapi_30(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {k: _openapi_30(v) for k, v in node.items() if k != "title"}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        inner = next(o for o in options if o != {"type": "null"})
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        inner = {"allOf": [inner]} if "$ref" in inner else inner
        node = {**inner, **rest, "nullable": True}
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "examples" in node:
        node["example"] = node.pop("examples")[0]
    return node


def document_openapi_components() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The document's schema and its sub-schemas, for the OpenAPI document's components."""
    schema = _document_adapter.json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    return _openapi_30(schema), {name: _openapi_30(sub) for name, sub in defs.items()}


def html_document(markup: str) -> dict[str, Any]:
    """An HTML template as a block document of one raw block (the conversion offered to HTML templates)."""
    return {"version": SCHEMA_VERSION, "blocks": [{"id": "raw-1", "type": "raw", "html": markup or ""}]}
