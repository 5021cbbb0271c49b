"""What an automatic reply may not say (the route step's content gates): promises of money, refunds,
credentials or account changes — the built-in list plus the operator's own phrases — and facts that are not
grounded in our knowledge or the contact's own thread. A draft that fails goes to human review; a reviewer may
still send it."""

from __future__ import annotations

import re

from inbox.fence import blocks, unfenced

PROMISE_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\brefund",
        r"\breimburs",
        r"\bmoney\s+back\b",
        r"\bcompensat",
        r"\bchargeback",
        r"\bcredit\s+(?:note|of|to\s+your)\b",
        r"\bgift\s+cards?\b",
        r"\bwire\s+transfer",
        r"\bbank\s+(?:details|account|transfer)",
        r"(?:€|\$|£|¥)\s?\d|\b\d[\d.,']*\s?(?:€|\$|£|eur|euros?|usd|dollars?|gbp|pounds?|chf)\b",
        r"\bpass(?:word|code|phrase)s?\b",
        r"\bcredentials?\b",
        r"\b(?:api|access|auth|security)\s+(?:keys?|tokens?|codes?)\b",
        r"\b(?:one-time|verification|login|2fa|mfa)\s+codes?\b",
        r"\blog-?in\s+(?:details|link|data)\b",
        r"\b(?:account|e-?mail\s+address|phone\s+number|billing\s+address|address|plan|subscription|ownership)"
        r"\s+(?:has|have|was|were|is|will\s+be)\s+(?:been\s+)?(?:changed|updated|deleted|closed|transferred|"
        r"cancell?ed|upgraded|downgraded|unlocked|reset|reactivated)",
        r"\b(?:changed|updated|deleted|closed|transferred|cancell?ed|upgraded|unlocked|reset|reactivated)\s+"
        r"(?:your|the)\s+(?:account|e-?mail|address|password|plan|subscription|access)",
        r"\b(?:approved|granted|authori[sz]ed|issued|processed)\s+(?:a\s+|the\s+|your\s+)?(?:refund|payment|"
        r"transfer|discount|credit|exception|waiver|request)",
        r"\bdiscount\s+of\b",
        r"\b(?:waive|waived|free\s+of\s+charge)\b",
    )
]
#: facts a draft must not invent: numbers of two digits or more (amounts, order and ticket numbers, dates),
#: links and e-mail addresses
_CLAIM = re.compile(
    r"https?://[^\s<>\"')\]]+|www\.[^\s<>\"')\]]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\d[\d.,:/-]*\d", re.IGNORECASE
)
MAX_OPERATOR_PHRASES = 200


def operator_phrases(text: str | None) -> list[str]:
    """The operator's extra phrases: one per line, blank lines ignored, compared case-insensitively."""
    lines = [line.strip() for line in (text or "").splitlines()]
    return [line for line in lines if line][:MAX_OPERATOR_PHRASES]


def promise_in(draft: str, extra: list[str] | None = None) -> str | None:
    """The first promise of money, refunds, credentials or account changes in `draft`, or None."""
    for pattern in PROMISE_PATTERNS:
        m = pattern.search(draft or "")
        if m:
            return m.group(0).strip()
    low = (draft or "").lower()
    for phrase in extra or []:
        if phrase.lower() in low:
            return phrase
    return None


def ungrounded_claims(draft: str, briefing: str, signature: str = "") -> list[str]:
    """The draft's numbers, links and addresses found nowhere in what grounds a reply: the briefing outside the
    current (untrusted) message — knowledge, files, the contact's own thread — and our signature."""
    grounding = unfenced(briefing, keep=("THREAD_HISTORY",)) + "\n" + (signature or "")
    grounding = grounding.lower()
    missing = []
    for m in _CLAIM.finditer(draft or ""):
        claim = m.group(0).rstrip(".,;:!?")
        if claim.lower() not in grounding and claim not in missing:
            missing.append(claim)
    missing += [f"echoes the mail: {e}" for e in echoed_sentences(draft, briefing)[:2]]
    return missing[:10]


#: a sentence of the mail this long (in words) repeated in the draft is the mail speaking, not us
ECHO_WORDS = 6
_SENTENCE = re.compile(r"[^.!?\n]+")


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def echoed_sentences(draft: str, briefing: str) -> list[str]:
    """Sentences of the current (untrusted) message that the draft repeats word for word."""
    said = _words(draft)
    echoed = []
    for current in blocks(briefing, "CURRENT_MESSAGE"):
        for sentence in _SENTENCE.findall(current):
            words = _words(sentence)
            if len(words.split()) >= ECHO_WORDS and words in said:
                echoed.append(sentence.strip()[:80])
    return echoed
