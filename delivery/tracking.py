"""Click and open tracking in a message's HTML (DLV-20): signed click links and the open pixel."""

from __future__ import annotations

import functools
import html as html_lib
import re
from typing import Any

from django.conf import settings

from delivery import tokens

_ANCHOR_RE = re.compile(r"<a\b[^>]*>", re.IGNORECASE)
_HREF_RE = re.compile(r"""(\bhref\s*=\s*)(["'])(.*?)\2""", re.IGNORECASE | re.DOTALL)
_SKIP_PREFIXES = ("mailto:", "tel:", "#", "javascript:", "sms:", "data:")


def rewrite_links(markup: str, *, organization_id: Any, send_id: Any, no_track: tuple[str, ...] = ()) -> str:
    """Rewrite each link to a signed click URL, except mailto/tel/#/javascript, already tracked links, links
    marked `data-no-track`, and the given no-track URLs (view-in-browser, unsubscribe, preferences)."""
    tracked_prefix = f"{tokens.site_url()}/t/c/"

    def anchor(match: re.Match[str]) -> str:
        tag = match.group(0)
        if "data-no-track" in tag.lower():
            return tag
        plan = _anchor_plan(tag)
        if plan is None:
            return tag
        before, target, encoded, after = plan
        if target.startswith(tracked_prefix) or target in no_track:
            return tag
        url = tokens.click_url(
            organization_id=organization_id, send_id=send_id, target=target, encoded=encoded
        )
        return f"{before}{html_lib.escape(url, quote=True)}{after}"

    return _ANCHOR_RE.sub(anchor, markup)


@functools.lru_cache(maxsize=2048)
def _anchor_plan(tag: str) -> tuple[str, str, str, str] | None:
    """How an `<a …>` tag is tracked, worked out once per distinct tag (a campaign's links repeat in every
    message): (the tag up to the href value, the target, `tokens.encode_target(target)`, the rest of the tag),
    or None when its link is never tracked (no href, mailto/tel/#/javascript, not a safe http(s) URL)."""
    m = _HREF_RE.search(tag)
    if m is None:
        return None
    target = html_lib.unescape(m.group(3)).strip()
    if not target or target.lower().startswith(_SKIP_PREFIXES) or not tokens.is_safe_target(target):
        return None
    return tag[: m.start(3)], target, tokens.encode_target(target), tag[m.end(3) :]


#: Below this much visible text (bytes; setting `DELIVERY_OPEN_PIXEL_MIN_TEXT`) a 1×1 image makes the body look
#: image-only to filters (SpamAssassin's HTML_IMAGE_ONLY_04 … _32 cover 0–3,200 bytes of text with any image);
#: such messages get no open pixel, and their opens are not measured (`OutgoingMessage.open_tracked`).
OPEN_PIXEL_MIN_TEXT = 3300
_SKIPPED_BLOCKS_RE = re.compile(r"<(head|style|script)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<[^>]*>")
_SPACE_RE = re.compile(r"\s+")


def visible_text_length(markup: str) -> int:
    """About what a filter counts as the HTML's text: tags, head, styles and scripts removed, whitespace
    collapsed, entities as one character."""
    text = _TAG_RE.sub(" ", _SKIPPED_BLOCKS_RE.sub(" ", markup))
    return len(_SPACE_RE.sub(" ", html_lib.unescape(text)).strip().encode("utf-8"))


def pixel_fits(markup: str) -> bool:
    """The open pixel goes in only when the body has enough text not to look image-only."""
    minimum = getattr(settings, "DELIVERY_OPEN_PIXEL_MIN_TEXT", OPEN_PIXEL_MIN_TEXT)
    return minimum <= 0 or visible_text_length(markup) >= minimum


def add_open_pixel(markup: str, *, organization_id: Any, send_id: Any) -> str:
    url = html_lib.escape(tokens.open_url(organization_id=organization_id, send_id=send_id), quote=True)
    pixel = f'<img src="{url}" width="1" height="1" alt="" style="display:none;border:0" />'
    return insert_before_body_end(markup, pixel)


def insert_before_body_end(markup: str, snippet: str) -> str:
    index = markup.rfind("</body>")
    if index == -1 or "</body" in markup[index + 7 :].lower():  # not written in lower case
        index = markup.lower().rfind("</body>")
    if index == -1:
        return markup + snippet
    return markup[:index] + snippet + markup[index:]


def tracked(html: str, *, organization_id: Any, send_id: Any, no_track: tuple[str, ...]) -> tuple[str, bool]:
    """The HTML with signed click links and, when the body has text enough, the open pixel (then True)."""
    html = rewrite_links(html, organization_id=organization_id, send_id=send_id, no_track=no_track)
    if pixel_fits(html):
        return add_open_pixel(html, organization_id=organization_id, send_id=send_id), True
    return html, False
