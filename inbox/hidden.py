"""Text a reader of the mail does not see but a model would (AGT-15): CSS-concealed elements and invisible
characters. `inbox.security` strips all of it before any model sees the mail and flags the message.

Concealed by style: `display:none`, `visibility:hidden`, near-zero opacity, a font of 2 px (or 0.2 em) and less,
boxes of zero/1 px size with hidden overflow or `max-height:0`, off-screen positions and indents (-500 px and
beyond), `clip: rect(0…)`, and text whose colour is (nearly) the background's — the nearest declared background
of the element or an ancestor, white when none is declared. Invisible characters: zero-width and bidi controls,
and the Unicode tag block (U+E0000…U+E007F), which spells ASCII invisibly (`tag_text` decodes it).
"""

from __future__ import annotations

import re

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u180e\u2061\u2062\u2063\u2064"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
TAGS = "\U000e0000-\U000e007f"
INVISIBLE = re.compile(f"[{ZERO_WIDTH}{BIDI}{TAGS}]")
TAG_RUN = re.compile(f"[{TAGS}]+")
WHITE = (255, 255, 255)
#: colours closer than this (Euclidean RGB distance) cannot be told apart on screen
SAME_COLOUR_DISTANCE = 48
NAMED = {
    "white": WHITE,
    "snow": (255, 250, 250),
    "ivory": (255, 255, 240),
    "whitesmoke": (245, 245, 245),
    "ghostwhite": (248, 248, 255),
    "azure": (240, 255, 255),
    "mintcream": (245, 255, 250),
    "seashell": (255, 245, 238),
    "floralwhite": (255, 250, 240),
    "aliceblue": (240, 248, 255),
    "honeydew": (240, 255, 240),
    "linen": (250, 240, 230),
    "black": (0, 0, 0),
    "red": (255, 0, 0),
    "blue": (0, 0, 255),
    "green": (0, 128, 0),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "silver": (192, 192, 192),
}
_DECL = re.compile(r"([a-z-]+)\s*:\s*([^;]+)", re.IGNORECASE)
_LENGTH = re.compile(r"^(-?\d*\.?\d+)\s*(px|pt|em|rem|%|vw|vh|cm|mm|in)?\b", re.IGNORECASE)
_RGB = re.compile(r"rgba?\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*(?:,\s*([\d.]+%?)\s*)?\)", re.I)


def strip_invisible(text: str) -> str:
    return INVISIBLE.sub("", text or "")


def tag_text(text: str) -> str:
    """The ASCII that Unicode tag characters in `text` spell (empty when there are none)."""
    return "".join(
        chr(ord(c) - 0xE0000)
        for run in TAG_RUN.findall(text or "")
        for c in run
        if 0x20 <= ord(c) - 0xE0000 < 0x7F
    )


def parse_colour(value: str | None) -> tuple[int, int, int] | None:
    value = (value or "").strip().lower().replace("!important", "").strip()
    if not value:
        return None
    if value.startswith("#"):
        digits = value[1:].split()[0] if value[1:] else ""
        if len(digits) in (3, 4):
            digits = "".join(d * 2 for d in digits[:3])
        if len(digits) in (6, 8) and all(c in "0123456789abcdef" for c in digits):
            return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
        return None
    m = _RGB.match(value)
    if m:
        return tuple(min(255, int(m.group(i))) for i in (1, 2, 3))  # type: ignore[return-value]
    return NAMED.get(value.split()[0])


def _declarations(style: str) -> dict[str, str]:
    return {k.lower(): v.strip().lower() for k, v in _DECL.findall(style or "")}


def _length_px(value: str) -> float | None:
    m = _LENGTH.match((value or "").strip())
    if not m:
        return None
    number, unit = float(m.group(1)), (m.group(2) or "px").lower()
    return number * {"em": 16, "rem": 16, "pt": 1.33, "%": 0.16, "cm": 38, "mm": 3.8, "in": 96}.get(unit, 1)


def _close(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5 < SAME_COLOUR_DISTANCE


def concealment(
    style: str, background: tuple[int, int, int] | None, *, color_attr: str = "", bg_attr: str = ""
) -> tuple[str | None, tuple[int, int, int] | None]:
    """(why the element's text is concealed or None, the background its children inherit)."""
    d = _declarations(style)
    own_bg = parse_colour(d.get("background-color") or d.get("background") or bg_attr)
    bg = own_bg or background
    if d.get("display", "").startswith("none"):
        return "display:none", bg
    if d.get("visibility", "").startswith(("hidden", "collapse")):
        return "visibility:hidden", bg
    opacity = _length_px(d.get("opacity", ""))
    if opacity is not None and opacity < 0.1:
        return "transparent", bg
    size = _length_px(d.get("font-size", ""))
    if size is not None and size <= 2.7:
        return "tiny font", bg
    for prop in ("left", "top", "text-indent", "margin-left", "margin-top", "right"):
        offset = _length_px(d.get(prop, ""))
        if offset is not None and offset <= -500:
            return "off-screen", bg
    hidden_overflow = d.get("overflow", "").startswith("hidden")
    for prop in ("width", "height", "max-height", "max-width"):
        extent = _length_px(d.get(prop, ""))
        if extent is not None and extent <= 1 and (hidden_overflow or prop.startswith("max")):
            return "zero size", bg
    if re.match(r"rect\(\s*0", d.get("clip", "")):
        return "clipped", bg
    colour = parse_colour(d.get("color") or color_attr)
    if colour is not None and _close(colour, bg or WHITE):
        return "same colour as background", bg
    return None, bg
