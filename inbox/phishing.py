"""Phishing signals beyond lookalike links (`inbox.security`): dangerous attachments, credential-harvest links,
and failed sender authentication raising the spam score. Pure functions over what the receive path stored."""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

_URL = re.compile(r"https?://[^\s<>\"')\]]+", re.IGNORECASE)
_HOSTISH = re.compile(r"\b((?:[a-z0-9-]+\.)+[a-z]{2,})\b", re.IGNORECASE)
#: executables, scripts, installers, shortcuts, disk images, macro-enabled Office files, HTML (a local phishing
#: page) — a message carrying one is quarantined
DANGEROUS_EXTENSIONS = frozenset(
    [
        "exe",
        "scr",
        "bat",
        "cmd",
        "com",
        "pif",
        "cpl",
        "msi",
        "msp",
        "msc",
        "jar",
        "js",
        "jse",
        "vbs",
        "vbe",
        "wsf",
        "wsh",
        "ws",
        "ps1",
        "psm1",
        "hta",
        "lnk",
        "reg",
        "inf",
        "scf",
        "url",
        "iso",
        "img",
        "vhd",
        "vhdx",
        "dll",
        "sys",
        "appx",
        "appxbundle",
        "msix",
        "apk",
        "dmg",
        "app",
        "command",
        "sh",
        "docm",
        "dotm",
        "xlsm",
        "xltm",
        "xlam",
        "xlsb",
        "pptm",
        "potm",
        "ppam",
        "ppsm",
        "sldm",
        "htm",
        "html",
        "shtml",
        "xhtml",
        "mht",
        "mhtml",
        "svg",
    ]
)
DANGEROUS_TYPES = frozenset(
    {
        "application/x-msdownload",
        "application/x-msdos-program",
        "application/x-dosexec",
        "application/x-executable",
        "application/vnd.microsoft.portable-executable",
        "application/x-sh",
        "application/javascript",
        "text/javascript",
        "application/hta",
        "text/html",
        "application/xhtml+xml",
        "image/svg+xml",
        "application/vnd.ms-word.document.macroenabled.12",
        "application/vnd.ms-excel.sheet.macroenabled.12",
        "application/vnd.ms-powerpoint.presentation.macroenabled.12",
    }
)
#: document-looking extensions that, followed by another extension, disguise what the file is (`invoice.pdf.exe`)
DECOY_EXTENSIONS = frozenset(
    [
        "pdf",
        "doc",
        "docx",
        "xls",
        "xlsx",
        "ppt",
        "pptx",
        "txt",
        "jpg",
        "jpeg",
        "png",
        "gif",
        "zip",
        "rtf",
        "csv",
        "odt",
    ]
)
_LOGIN_WORDS = re.compile(
    r"log-?in|sign-?in|log-?on|signon|verif|account|passw|credential|secure|webscr|auth|unlock|suspend|"
    r"reactivat|validate|billing-update|wallet",
    re.IGNORECASE,
)
_GENERIC_ANCHOR = re.compile(
    r"^\s*(?:click\s+here|here|this\s+link|link|login|log\s*in|sign\s*in|verify(?:\s+(?:now|account|here|"
    r"your\s+account|identity))?|confirm(?:\s+(?:now|account|here))?|update(?:\s+(?:now|account|details))?|"
    r"continue|open|view(?:\s+document)?|access(?:\s+account)?|reset(?:\s+password)?|unlock(?:\s+account)?|"
    r"secure\s+(?:login|link)|review)\s*[.!:>»]*\s*$",
    re.IGNORECASE,
)
_CREDENTIAL_ASK = re.compile(
    r"\b(?:verify|confirm|update|validate|re-?enter)\s+(?:your\s+)?(?:account|identity|password|credentials|login|"
    r"details|payment)|\b(?:account|mailbox)\s+(?:will\s+be\s+)?(?:suspended|locked|closed|disabled)|"
    r"\bsign\s+in\s+to\s+(?:keep|avoid|restore)",
    re.IGNORECASE,
)


def _extensions(filename: str) -> list[str]:
    name = (filename or "").strip().lower().rstrip(". ")
    return [p.strip() for p in name.split(".")[1:] if p.strip()]


def dangerous_attachment(attachment: dict[str, Any]) -> str | None:
    """Why an attachment (`{"filename", "contentType"}`) is dangerous, or None."""
    filename = str(attachment.get("filename") or "")
    exts = _extensions(filename)
    ctype = str(attachment.get("contentType") or "").lower()
    if exts and exts[-1] in DANGEROUS_EXTENSIONS:
        if len(exts) >= 2 and exts[-2] in DECOY_EXTENSIONS:
            return f"double extension: {filename[:100]}"
        return f"dangerous file type: {filename[:100]}"
    if len(exts) >= 2 and exts[-2] in DECOY_EXTENSIONS and exts[-1] not in DECOY_EXTENSIONS:
        return f"double extension: {filename[:100]}"
    if ctype in DANGEROUS_TYPES:
        return f"dangerous content type: {ctype} ({filename[:80] or 'unnamed'})"
    return None


def dangerous_attachments(attachments: list[dict[str, Any]] | None) -> list[str]:
    return [r for r in (dangerous_attachment(a) for a in attachments or [] if isinstance(a, dict)) if r]


def credential_harvest(
    links: list[tuple[str, str]], text: str, text_urls: list[str], *, sender_domain: str, own_domain: str = ""
) -> str | None:
    """A link that asks for a login elsewhere, to a host that is neither the sender's nor ours: a login word in
    the link behind generic anchor text ("click here", "verify"), or in a mail that asks to verify an account
    (a bare URL counts only then)."""
    from inbox.sender_auth import aligned

    asks = bool(_CREDENTIAL_ASK.search(text or ""))
    candidates = [(href, shown, True) for href, shown in links] + [(url, "", False) for url in text_urls]
    for href, shown, anchored in candidates:
        host = _host(href)
        if not host or aligned(host, sender_domain) or (own_domain and aligned(host, own_domain)):
            continue
        login_link = bool(_LOGIN_WORDS.search(href))
        generic = anchored and (not shown.strip() or bool(_GENERIC_ANCHOR.match(shown)))
        # a link behind generic words that leads to a login elsewhere; a bare link only with a plea to log in
        if (login_link and (generic or asks)) or (asks and generic):
            return f"credential-harvest link: {href[:100]}"
    return None


def authentication_score(spf: str | None, dmarc: str | None) -> int:
    """What failed sender authentication adds to the spam score."""
    score = 0
    if dmarc == "fail":
        score += 40
    if spf in ("fail", "softfail"):
        score += 20 if spf == "fail" else 10
    return score


# --- lookalike links and homoglyph names ----------------------------------------------------------


def _scripts(word: str) -> set[str]:
    out = set()
    for ch in word:
        if ch.isalpha():
            try:
                name = unicodedata.name(ch)
            except ValueError:
                continue
            out.add(name.split(" ")[0])
    return out


def mixed_script(word: str) -> bool:
    """Latin mixed with Cyrillic or Greek inside one word: the classic homoglyph spoof."""
    scripts = _scripts(word)
    return "LATIN" in scripts and bool(scripts & {"CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"})


def homoglyph_name(display_name: str) -> bool:
    return any(mixed_script(w) for w in re.split(r"[\s@.,<>]+", display_name or "") if w)


def _host(url: str) -> str:
    try:
        return (urlsplit(url.strip()).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


def _registrable(host: str) -> str:
    parts = host.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else host


def suspicious_host(host: str) -> bool:
    if not host:
        return False
    if any(label.startswith("xn--") for label in host.split(".")):
        return True
    return any(not ch.isascii() for ch in host) and mixed_script(host.replace(".", "").replace("-", ""))


def lookalike_links(links: list[tuple[str, str]], text: str) -> list[str]:
    """Links whose shown text names another site than the target, and links to punycode/mixed-script hosts."""
    found = []
    for href, shown in links:
        target = _host(href)
        if suspicious_host(target):
            found.append(href)
            continue
        m = _HOSTISH.search(shown or "")
        if m and target and href.lower().startswith(("http://", "https://")):
            shown_host = m.group(1).lower()
            if _registrable(shown_host) != _registrable(target):
                found.append(href)
    for url in _URL.findall(text or ""):
        if suspicious_host(_host(url)):
            found.append(url)
    return found
