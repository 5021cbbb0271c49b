"""Why a delivery failed, read from the status code and the diagnostic text, and what each reason means for the
recipient's address.

The taxonomy follows the widely used bounce analysers: a reason names the cause, and the cause — not the code's
first digit — decides the consequence:

- address dead (`user_unknown`, `host_unknown`, `mailbox_disabled`) → kind `hard`: suppressed at once;
- the mailbox or the path is in trouble for now (`mailbox_full`, `expired`, `other` — an unexplained failure)
  → kind `soft`: counted, suppressed only after `BOUNCE_SOFT_THRESHOLD` within `BOUNCE_SOFT_WINDOW_DAYS`;
- the receiving system refused *us* (`blocked` — sender IP or domain reputation, `policy` — authentication,
  DMARC, PTR, relaying, `spam_content`, `too_big`, `rate_limited`) → kind `block`: the address is fine and is
  never suppressed; the blocks raise a deliverability alert instead;
- `delayed` (a warning: the MTA still tries), `auto_reply`, `complaint`, `not_a_bounce`: their own kinds.

Text wins over the code where it is specific (many servers answer "550 5.1.1" for a blocklisted IP, or "554"
for everything); of the text patterns, those naming a refusal of the sender are tried first, so an ambiguous
diagnostic never suppresses an address that may be fine.
"""

from __future__ import annotations

import re

USER_UNKNOWN = "user_unknown"
HOST_UNKNOWN = "host_unknown"
MAILBOX_FULL = "mailbox_full"
MAILBOX_DISABLED = "mailbox_disabled"
BLOCKED = "blocked"
POLICY = "policy"
SPAM_CONTENT = "spam_content"
TOO_BIG = "too_big"
RATE_LIMITED = "rate_limited"
EXPIRED = "expired"
DELAYED = "delayed"
AUTO_REPLY = "auto_reply"
COMPLAINT = "complaint"
NOT_A_BOUNCE = "not_a_bounce"
OTHER = "other"

REASON_LABELS = {
    USER_UNKNOWN: "user unknown",
    HOST_UNKNOWN: "host or domain unknown",
    MAILBOX_FULL: "mailbox full",
    MAILBOX_DISABLED: "mailbox disabled or suspended",
    BLOCKED: "blocked (sender IP or domain reputation)",
    POLICY: "policy (authentication, DMARC, PTR, relaying)",
    SPAM_CONTENT: "spam or content rejected",
    TOO_BIG: "message too big",
    RATE_LIMITED: "rate limited",
    EXPIRED: "expired (gave up retrying)",
    DELAYED: "delayed (warning only)",
    AUTO_REPLY: "auto-reply",
    COMPLAINT: "complaint",
    NOT_A_BOUNCE: "not a bounce",
    OTHER: "unexplained failure",
}
REASON_CHOICES = list(REASON_LABELS.items())

HARD_REASONS = frozenset({USER_UNKNOWN, HOST_UNKNOWN, MAILBOX_DISABLED})
SOFT_REASONS = frozenset({MAILBOX_FULL, EXPIRED, OTHER})
BLOCK_REASONS = frozenset({BLOCKED, POLICY, SPAM_CONTENT, TOO_BIG, RATE_LIMITED})


def kind_of(reason: str) -> str:
    """The consequence of a failure reason: `hard`, `soft` or `block`; other reasons are their own kind."""
    if reason in HARD_REASONS:
        return "hard"
    if reason in SOFT_REASONS:
        return "soft"
    if reason in BLOCK_REASONS:
        return "block"
    return reason


def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


# Refusals of the sender, tried first (see the module docstring).
_TEXT_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        SPAM_CONTENT,
        _rx(
            r"\bspam\b(?! ?(?:trap|folder))",
            r"\bjunk mail\b",
            r"content (?:was )?rejected",
            r"message content",
            r"rejected (?:due to|because of) (?:its )?content",
            r"\bvirus\b",
            r"malware",
            r"phish",
            r"suspicious (?:content|url|link)",
            r"\burl\b.{0,40}\b(?:blocked|listed|rejected)",
            r"unsolicited",
            r"bulk mail",
            r"looks like spam",
            r"high probability of",
            r"attachment.{0,30}(?:rejected|not allowed|blocked)",
            r"\bUBE\b",
        ),
    ),
    (
        POLICY,
        _rx(
            r"\bdmarc\b",
            r"\bspf\b",
            r"\bdkim\b",
            r"authenticat",
            r"\bptr\b",
            r"reverse (?:dns|lookup|hostname)",
            r"\brdns\b",
            r"relay(?:ing)? (?:access )?(?:denied|not permitted|not allowed|prohibited)",
            r"(?:unable|not permitted|not allowed|we do not) (?:to )?relay",
            r"relay access",
            r"\btls\b.{0,30}required",
            r"requires? (?:a )?(?:secure|encrypted) connection",
            r"sender address rejected",
            r"sender (?:domain|address).{0,40}(?:not|invalid|rejected|unverif|must)",
            r"domain of sender",
            r"sender verify",
            r"not accepted from (?:this|your) (?:sender|domain)",
            r"\bmessage rejected\b.{0,30}\bsecurity\b",
        ),
    ),
    (
        BLOCKED,
        _rx(
            r"blocked using",
            r"\b(?:black|block|deny|ban)[ -]?list",
            r"\bdnsbl\b",
            r"\brbl\b",
            r"spamhaus",
            r"spamcop",
            r"barracuda(?:central)?",
            r"sorbs",
            r"(?<!not )\blisted\b",
            r"reputation",
            r"client host (?:\[?[\w.:-]+\]? )?(?:rejected|blocked)",
            r"\bhost\b.{0,40}\bblocked\b",
            r"\bip\b.{0,60}\b(?:blocked|banned|rejected|not allowed)",
            r"(?:connection|service) (?:refused|denied|unavailable).{0,40}(?:block|ip|client host)",
            r"banned",
            r"poor sending",
            r"not allowed to send",
            r"\bblocked\b",
            r"\bS3140\b",
            r"\bRP-00\d\b",
            r"\bAS\(\d+\)",
            r"\bTSS\d\d\b",
            r"\bCON:B1\b",
            r"\bIPTS\d\d\b",
        ),
    ),
    (POLICY, _rx(r"polic(?:y|ies)", r"prohibit", r"not authori[sz]ed", r"access denied")),
    (
        MAILBOX_FULL,
        _rx(
            r"mail ?box (?:is )?full",
            r"quota",
            r"insufficient (?:storage|system storage|disk)",
            r"(?:user|mailbox|account) (?:is )?over",
            r"exceeded (?:its|their|the) storage",
            r"out of (?:storage|space)",
            r"storage (?:allocation|limit) exceeded",
            r"disk full",
            r"mailbox size limit",
            r"full mailbox",
            r"no space left",
            r"mailfolder is full",
        ),
    ),
    (
        RATE_LIMITED,
        _rx(
            r"rate[ -]?limit",
            r"too many (?:messages|connections|recipients|emails|concurrent|mails)",
            r"throttl",
            r"unusual (?:rate|volume)",
            r"sending rate",
            r"exceeded.{0,40}(?:limit|rate|messages)",
            r"limit exceeded",
            r"temporarily deferred",
            r"\bgreylist",
            r"\bgraylist",
        ),
    ),
    (
        TOO_BIG,
        _rx(
            r"message (?:size|length) (?:exceeds|too)",
            r"size (?:exceeds|limit)",
            r"(?:message|mail) (?:is )?too (?:large|big|long)",
            r"exceeds (?:the )?(?:maximum|max)(?:imum)? (?:message )?size",
            r"too large",
        ),
    ),
    (
        MAILBOX_DISABLED,
        _rx(
            r"(?:account|mailbox|user|address)\b.{0,40}\b(?:disabled|suspended|deactivated|inactive|locked|"
            r"closed|expired|terminated|blocked by (?:the )?user)",
            r"\b(?:disabled|suspended|inactive|deactivated)\b.{0,20}\b(?:account|mailbox|user|recipient)",
            r"no longer (?:active|in use|available|valid)",
            r"has been (?:disabled|suspended|deactivated|closed)",
            r"account unavailable",
        ),
    ),
    (
        HOST_UNKNOWN,
        _rx(
            r"host (?:or domain name )?not found",
            r"domain (?:name )?not found",
            r"(?:unrouteable|unroutable) (?:mail )?domain",
            r"no (?:mx|mail exchanger|such domain)",
            r"domain (?:does not|doesn't) exist",
            r"name service error",
            r"unknown (?:host|domain)",
            r"\bnxdomain\b",
            r"dns (?:lookup )?(?:failure|error).{0,40}(?:domain|mx)",
            r"all relevant mx records point to non-existent hosts",
            r"domain.{0,30}(?:is not|isn't) (?:valid|accepting|configured)",
        ),
    ),
    (
        USER_UNKNOWN,
        _rx(
            r"(?:user|recipient|mailbox|address|account)\s*(?:name )?(?:is )?(?:unknown|not found|"
            r"does not exist|doesn't exist|not exist|invalid|unavailable|not listed|rejected)",
            r"unknown (?:user|recipient|local[- ]part|address|mailbox|alias)",
            r"no such (?:user|recipient|mailbox|address|account|person|local user)",
            r"invalid (?:recipient|mailbox|address|user)",
            r"(?:does not|doesn't) exist",
            r"recipientnotfound",
            r"\bnosuchuser\b",
            r"not a valid (?:mailbox|recipient|user|address)",
            r"unrouteable address",
            r"bad destination (?:mailbox|address)",
            r"there is no one at this address",
            r"address (?:couldn't|could not) be found",
            r"undeliverable address",
            r"no mailbox",
            r"not our customer",
            r"(?:is )?not listed in (?:the )?(?:domino )?directory",
            r"user doesn't have a",
            r"mailbox (?:not found|unavailable)",
            r"recipient (?:address )?rejected",
            r"address rejected",
            r"unknown or illegal alias",
            r"addressee unknown",
            r"no valid recipients",
        ),
    ),
    (
        EXPIRED,
        _rx(
            r"\bexpired\b",
            r"not going to try again",
            r"retry (?:timeout|time) (?:exceeded|reached)",
            r"could not be delivered (?:for|within) \d+",
            r"delivery time expired",
            r"message timed out",
            r"timed out",
            r"gave up",
            r"giving up",
            r"too long in (?:the )?queue",
            r"maximum (?:retry|delivery) (?:time|count)",
            r"time limit",
        ),
    ),
]

_CODE_REASONS = {
    "1.0": None,
    "1.1": USER_UNKNOWN,
    "1.2": HOST_UNKNOWN,
    "1.3": USER_UNKNOWN,
    "1.4": USER_UNKNOWN,
    "1.5": USER_UNKNOWN,
    "1.6": USER_UNKNOWN,
    "1.10": USER_UNKNOWN,
    "1.7": POLICY,
    "1.8": POLICY,
    "2.1": MAILBOX_DISABLED,
    "2.2": MAILBOX_FULL,
    "2.3": TOO_BIG,
    "3.2": OTHER,
    "3.4": TOO_BIG,
    "4.4": HOST_UNKNOWN,
    "4.6": OTHER,
    "4.7": EXPIRED,
    "7.0": BLOCKED,
    "7.1": BLOCKED,
    "7.23": POLICY,
    "7.25": POLICY,
    "7.26": POLICY,
    "7.27": POLICY,
    "7.28": RATE_LIMITED,
    "7.57": POLICY,
    "7.606": BLOCKED,
    "7.708": BLOCKED,
}
_STATUS_RE = re.compile(r"(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d])")
_BASIC_RE = re.compile(r"(?<![\d.#])([245])(\d)(\d)(?=[ -]|$)")


def find_status(text: str | None) -> str | None:
    """The first RFC 3463 enhanced status code in `text` (`5.1.1`), else None."""
    if not text:
        return None
    match = _STATUS_RE.search(text)
    return ".".join(match.groups()) if match else None


def find_basic_code(text: str | None) -> str | None:
    """The first RFC 5321 reply code (`550`) in `text`, else None."""
    if not text:
        return None
    match = _BASIC_RE.search(text)
    return "".join(match.groups()) if match else None


def reason_from_text(text: str | None) -> str | None:
    """The reason a diagnostic names, or None when it names none of the known causes."""
    if not text:
        return None
    for reason, pattern in _TEXT_RULES:
        if pattern.search(text):
            return reason
    return None


def reason_from_status(status: str | None) -> str | None:
    """The reason an enhanced status code names on its own (subject.detail), or None."""
    if not status:
        return None
    _, _, tail = status.partition(".")
    reason = _CODE_REASONS.get(tail)
    if reason is None and tail.startswith("7."):
        return BLOCKED
    return reason


def classify_failure(status: str | None, diagnostic: str | None, *, permanent: bool | None = None) -> str:
    """The reason of one failed recipient: text first, then the enhanced code, then `other`.

    A 4.x.x failure the text does not explain is `other` (soft); a 4.x.x mailbox-dead reason is kept as soft
    too (`other`), because the server itself said the condition may clear.
    """
    status = status or find_status(diagnostic)
    reason = reason_from_text(diagnostic) or reason_from_status(status)
    if reason is None:
        basic = find_basic_code(diagnostic)
        if basic in ("552",):
            reason = MAILBOX_FULL
        elif basic in ("421", "450", "451", "452") and reason_from_text(diagnostic) is None:
            reason = OTHER
    reason = reason or OTHER
    transient = (status or "").startswith("4.") or (
        status is None and (find_basic_code(diagnostic) or "").startswith("4")
    )
    if permanent is False:
        transient = True
    if transient and reason in HARD_REASONS:
        return OTHER
    return reason
