"""The content scanner (CMP-25, CMP-26): subject, HTML stripped to text and extracted links in, a score and
flags out. Pure except the optional Google Safe Browsing lookup (which never blocks on failure)."""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

SEVERITY_POINTS = {"high": 20, "medium": 10, "low": 3}
URL_FLAG_POINTS = {"high": 20, "medium": 10, "low": 3}
BLOCKED_AT, SUSPICIOUS_AT = 40, 15

#: ~35 weighted phrases (weight ≥ 5 → high, 3–4 → medium; weak hits totalling ≥ 8 → one medium flag).
SPAM_KEYWORDS: dict[str, int] = {
    # money scams
    "free money": 6,
    "make money fast": 6,
    "double your money": 6,
    "cash bonus": 4,
    "risk-free": 3,
    "no credit check": 5,
    "earn extra cash": 4,
    "million dollars": 5,
    "you have won": 5,
    "claim your prize": 5,
    "lottery winner": 6,
    # pharma
    "viagra": 8,
    "cialis": 8,
    "online pharmacy": 6,
    "weight loss pills": 5,
    "miracle cure": 5,
    # urgency
    "act now": 3,
    "urgent response": 3,
    "limited time offer": 2,
    "expires today": 2,
    "don't delete": 3,
    "once in a lifetime": 3,
    # crypto / gambling
    "bitcoin investment": 5,
    "crypto giveaway": 6,
    "guaranteed returns": 5,
    "online casino": 5,
    "free spins": 4,
    # adult
    "xxx": 6,
    "adult content": 5,
    "hot singles": 6,
    # generic
    "click here": 1,
    "buy now": 1,
    "100% free": 2,
    "order now": 1,
    "special promotion": 1,
}
PHISHING_BRANDS = ("paypal", "amazon", "google", "microsoft", "apple", "facebook")
SUSPICIOUS_TLDS = frozenset({"xyz", "top", "club", "buzz", "icu", "work", "monster", "quest", "sbs"})
URL_SHORTENERS = frozenset(
    {
        "bit.ly",
        "tinyurl.com",
        "goo.gl",
        "t.co",
        "ow.ly",
        "is.gd",
        "buff.ly",
        "rebrand.ly",
        "cutt.ly",
        "shorturl.at",
        "tiny.cc",
        "bl.ink",
        "rb.gy",
        "t.ly",
        "v.gd",
        "s.id",
        "soo.gd",
    }
)
PROHIBITED_PATTERNS = (
    (
        "advance-fee fraud",
        re.compile(r"(inheritance|next of kin|beneficiary).{0,60}(fund|million|transfer)", re.I),
    ),
    ("urgent wire transfer", re.compile(r"urgent(ly)?\s+(wire|bank)\s+transfer", re.I)),
    (
        "request for sensitive numbers",
        re.compile(r"(social security number|\bssn\b|credit card number|card verification)", re.I),
    ),
    (
        "credential-reset phishing",
        re.compile(
            r"(verify|confirm|update)\s+your\s+(account|password|login)\s+(now|immediately|within)", re.I
        ),
    ),
)

_ANCHOR = re.compile(r"<a\b[^>]*?href\s*=\s*(['\"])(.*?)\1[^>]*>(.*?)</a>", re.I | re.S)
_TAG = re.compile(r"<[^>]+>")
_DOMAIN_IN_TEXT = re.compile(r"\b((?:[a-z0-9-]+\.)+[a-z]{2,})\b", re.I)


#: characters of context kept on each side of the offending text
EXCERPT_CONTEXT = 40


@dataclass(frozen=True)
class Flag:
    rule: str
    severity: str
    description: str
    #: the offending text as the reviewer reads it: `match` inside `excerpt` (some context around it)
    excerpt: str = ""
    match: str = ""

    def as_dict(self) -> dict[str, str]:
        found = {"rule": self.rule, "severity": self.severity, "description": self.description}
        if self.excerpt:
            found.update(excerpt=self.excerpt, match=self.match)
        return found


def excerpt_at(text: str, start: int, end: int) -> tuple[str, str]:
    """(`…context match context…`, `match`) for `text[start:end]`, on one line."""
    before = max(0, start - EXCERPT_CONTEXT)
    after = min(len(text), end + EXCERPT_CONTEXT)
    snippet = ("…" if before else "") + text[before:after] + ("…" if after < len(text) else "")
    return " ".join(snippet.split()), " ".join(text[start:end].split())


def excerpt_of(text: str, needle: str) -> tuple[str, str]:
    """The first occurrence of `needle` in `text` (case-insensitive) with its context; the needle alone if absent."""
    at = text.lower().find(needle.lower())
    if at < 0:
        return needle[:200], needle[:200]
    return excerpt_at(text, at, at + len(needle))


@dataclass
class ScanResult:
    score: int
    level: str
    flags: list[Flag] = field(default_factory=list)

    def flag_dicts(self) -> list[dict[str, str]]:
        return [f.as_dict() for f in self.flags]


@dataclass(frozen=True)
class Link:
    href: str
    text: str


def extract_links(html: str) -> list[Link]:
    return [Link(m.group(2).strip(), _TAG.sub("", m.group(3)).strip()) for m in _ANCHOR.finditer(html or "")]


def html_text(html: str) -> str:
    from templates.rendering import html_to_text

    return html_to_text(html or "")


def content_fingerprint(subject: str, html: str) -> str:
    """CMP-12: hash of the effective subject and the rendered HTML."""
    return hashlib.sha256(f"{subject}\n\x00\n{html}".encode()).hexdigest()


# --- rules -------------------------------------------------------------------------------------------------


def _spam_keywords(subject: str, text: str, links: list[Link]) -> list[Flag]:
    original = f"{subject}\n{text}"
    haystack = original.lower()
    flags: list[Flag] = []
    weak_total = 0
    weak_hits: list[str] = []
    for phrase, weight in SPAM_KEYWORDS.items():
        if phrase not in haystack:
            continue
        if weight >= 3:
            severity = "high" if weight >= 5 else "medium"
            flags.append(
                Flag("spam_keywords", severity, f'Spam phrase "{phrase}"', *excerpt_of(original, phrase))
            )
        else:
            weak_total += weight
            weak_hits.append(phrase)
    if weak_total >= 8:
        excerpt, match = excerpt_of(original, weak_hits[0])
        flags.append(
            Flag("spam_keywords", "medium", "Several spam phrases: " + ", ".join(weak_hits), excerpt, match)
        )
    return flags


def _host(href: str) -> str:
    try:
        return (urlsplit(href).hostname or "").lower()
    except ValueError:
        return ""


def _is_typosquat(host: str) -> str | None:
    labels = host.split(".")
    registered = ".".join(labels[-2:]) if len(labels) >= 2 else host
    for brand in PHISHING_BRANDS:
        if registered in (f"{brand}.com",) or host.endswith(f".{brand}.com"):
            continue
        name = labels[-2] if len(labels) >= 2 else host
        squashed = name.replace("0", "o").replace("1", "l").replace("rn", "m").replace("-", "")
        if brand in squashed and name != brand:
            return brand
        if squashed == brand and name != brand:
            return brand
    return None


def _phishing_urls(subject: str, text: str, links: list[Link]) -> list[Flag]:
    flags: list[Flag] = []
    for link in links:
        href = link.href.strip()
        lower = href.lower()
        if lower.startswith(("javascript:", "data:")):
            flags.append(
                Flag("phishing_urls", "high", f"Script or data link: {href[:60]}", *_link_excerpt(link))
            )
            continue
        host = _host(href)
        if not host:
            continue
        brand = _is_typosquat(host)
        if brand:
            flags.append(
                Flag("phishing_urls", "high", f"Look-alike of {brand}: {host}", *_link_excerpt(link))
            )
        tld = host.rsplit(".", 1)[-1]
        if tld in SUSPICIOUS_TLDS:
            flags.append(
                Flag("phishing_urls", "high", f"Suspicious top-level domain: {host}", *_link_excerpt(link))
            )
        shown = _DOMAIN_IN_TEXT.search(link.text or "")
        if shown:
            shown_host = shown.group(1).lower().removeprefix("www.")
            if shown_host != host.removeprefix("www.") and not host.endswith("." + shown_host):
                flags.append(
                    Flag(
                        "phishing_urls",
                        "high",
                        f"Link text shows {shown_host} but points to {host}",
                        *_link_excerpt(link),
                    )
                )
    return flags


def _link_excerpt(link: Link) -> tuple[str, str]:
    """A link as the reviewer reads it: its text and where it points."""
    href = link.href.strip()[:200]
    shown = " ".join(_TAG.sub(" ", link.text or "").split())[:120]
    return (f"{shown} → {href}" if shown else href), href


def _url_shorteners(subject: str, text: str, links: list[Link]) -> list[Flag]:
    flags = []
    seen: set[str] = set()
    for link in links:
        host = _host(link.href).removeprefix("www.")
        if host in URL_SHORTENERS and host not in seen:
            seen.add(host)
            flags.append(Flag("url_shorteners", "medium", f"URL shortener: {host}", *_link_excerpt(link)))
    return sorted(flags, key=lambda f: f.description)


def _mixed_scripts(value: str) -> bool:
    scripts = set()
    for ch in value:
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        scripts.add(name.split(" ")[0])
    return len(scripts) > 1


def _homoglyphs(subject: str, text: str, links: list[Link]) -> list[Flag]:
    flags: list[Flag] = []
    for link in links:
        host = _host(link.href)
        for label, value in (("domain", host), ("text", link.text or "")):
            if not value:
                continue
            non_ascii = any(ord(ch) > 127 for ch in value)
            if host.startswith("xn--") or ".xn--" in host or (non_ascii and _mixed_scripts(value)):
                flags.append(
                    Flag(
                        "homoglyphs",
                        "high",
                        f"Confusable characters in link {label}: {value[:60]}",
                        *_link_excerpt(link),
                    )
                )
                break
    return flags


def _subject_caps(subject: str, text: str, links: list[Link]) -> list[Flag]:
    letters = [ch for ch in subject if ch.isalpha()]
    if len(subject) >= 10 and letters and sum(ch.isupper() for ch in letters) / len(letters) > 0.5:
        return [Flag("subject_caps", "low", "Subject is mostly upper-case", subject[:200], subject[:200])]
    return []


def _subject_punctuation(subject: str, text: str, links: list[Link]) -> list[Flag]:
    if subject.count("!") >= 3 or subject.count("?") >= 3:
        return [
            Flag(
                "subject_punctuation",
                "low",
                "Subject has excessive punctuation",
                subject[:200],
                subject[:200],
            )
        ]
    return []


def _prohibited(subject: str, text: str, links: list[Link]) -> list[Flag]:
    haystack = f"{subject}\n{text}"
    flags = []
    for name, rx in PROHIBITED_PATTERNS:
        found = rx.search(haystack)
        if found:
            excerpt, match = excerpt_at(haystack, found.start(), found.end())
            flags.append(Flag("prohibited_content", "high", f"Prohibited content: {name}", excerpt, match))
    return flags


RULES = (
    _spam_keywords,
    _phishing_urls,
    _url_shorteners,
    _homoglyphs,
    _subject_caps,
    _subject_punctuation,
    _prohibited,
)


def level_for(score: int) -> str:
    if score >= BLOCKED_AT:
        return "blocked"
    if score >= SUSPICIOUS_AT:
        return "suspicious"
    return "clean"


def scan_content(
    subject: str, html: str, *, rules: tuple = RULES, url_flags: list[Flag] | None = None
) -> ScanResult:
    """CMP-26; a rule that crashes adds a low `suspicious_pattern` flag instead of aborting the scan.
    `url_flags` (Safe Browsing) add 20/10/3 each; combined = min(100, scanner + URL score)."""
    text = html_text(html)
    links = extract_links(html)
    flags: list[Flag] = []
    for rule in rules:
        try:
            flags.extend(rule(subject or "", text, links))
        except Exception:
            logger.exception("content-scan rule %s crashed", getattr(rule, "__name__", rule))
            flags.append(Flag("suspicious_pattern", "low", "A content check could not be completed"))
    score = min(100, sum(SEVERITY_POINTS[f.severity] for f in flags))
    url_score = sum(URL_FLAG_POINTS[f.severity] for f in url_flags or [])
    flags.extend(url_flags or [])
    combined = min(100, score + url_score)
    return ScanResult(score=combined, level=level_for(combined), flags=flags)


def safe_browsing_flags(links: list[Link]) -> list[Flag]:
    """CMP-25: the Google Safe Browsing (v4 `threatMatches:find`) lookup of the link URLs when
    `GOOGLE_SAFE_BROWSING_API_KEY` is set, through the outbound guard (`owlat.outbound`) at
    `GOOGLE_SAFE_BROWSING_URL`; the key travels in the `X-Goog-Api-Key` header, never in the URL. A lookup
    failure (refused, unreachable, timeout, an error status, an unreadable answer) never blocks: no URL flags."""
    from django.conf import settings

    from owlat import outbound

    key = getattr(settings, "GOOGLE_SAFE_BROWSING_API_KEY", "")
    urls = sorted({link.href for link in links if link.href.lower().startswith(("http://", "https://"))})
    if not key or not urls:
        return []
    body: dict[str, Any] = {
        "client": {"clientId": "owlat", "clientVersion": "1"},
        "threatInfo": {
            "threatTypes": ["MALWARE", "SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE"],
            "platformTypes": ["ANY_PLATFORM"],
            "threatEntryTypes": ["URL"],
            "threatEntries": [{"url": u} for u in urls[:500]],
        },
    }
    try:
        with outbound.requests_session() as session:
            response = session.post(
                settings.GOOGLE_SAFE_BROWSING_URL,
                json=body,
                headers={"X-Goog-Api-Key": key},
                timeout=5,
                allow_redirects=False,
            )
            response.raise_for_status()
            matches = (response.json() or {}).get("matches", [])
        if not isinstance(matches, list):
            raise ValueError("matches is not a list")
    except Exception as exc:  # CMP-25: a lookup failure never blocks
        logger.warning("Safe Browsing lookup failed; the scan continues without it: %s", exc)
        return []
    severity = {"MALWARE": "high", "SOCIAL_ENGINEERING": "high", "UNWANTED_SOFTWARE": "medium"}
    return [
        Flag("safe_browsing", severity.get(m.get("threatType"), "low"), f"Unsafe link: {m['threat']['url']}")
        for m in matches
        if isinstance(m, dict) and isinstance(m.get("threat"), dict)
    ]
