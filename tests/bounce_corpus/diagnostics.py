"""Diagnostic lines of the corpus, per receiving provider, as the providers document them (see NOTICE): the
status code, the text the server answers, and the reason an analyser gives it. `{r}` is the recipient and
`{ip}` the sending IP (RFC 5737 documentation addresses)."""

from __future__ import annotations

D = tuple[str, str, str]  # (enhanced status, server reply, expected reason)

GENERIC: list[D] = [
    (
        "5.1.1",
        "550 5.1.1 <{r}>: Recipient address rejected: User unknown in virtual mailbox table",
        "user_unknown",
    ),
    ("5.1.1", "550 5.1.1 <{r}>... User unknown", "user_unknown"),
    ("5.1.2", "550 5.1.2 <{r}>: Recipient address rejected: Domain not found", "host_unknown"),
    ("5.2.2", "552 5.2.2 <{r}>: user is over quota", "mailbox_full"),
    ("5.2.1", "550 5.2.1 <{r}>: mailbox disabled, not accepting messages", "mailbox_disabled"),
    ("5.7.1", "554 5.7.1 Service unavailable; Client host [{ip}] blocked using zen.spamhaus.org", "blocked"),
    ("5.7.1", "550 5.7.1 Client host rejected: cannot find your reverse hostname, [{ip}]", "policy"),
    ("5.7.1", "554 5.7.1 <{r}>: Relay access denied", "policy"),
    ("5.7.1", "550 5.7.1 Message rejected as spam by Content Filtering.", "spam_content"),
    ("5.3.4", "552 5.3.4 Message size exceeds fixed limit", "too_big"),
    ("5.0.0", "550 Requested action not taken: mailbox unavailable", "user_unknown"),
    ("5.0.0", "554 Transaction failed", "other"),
]

GMAIL: list[D] = [
    (
        "5.1.1",
        "550-5.1.1 The email account that you tried to reach does not exist. Please try double-checking the "
        "recipient's email address for typos or unnecessary spaces. For more information, go to "
        "https://support.google.com/mail/?p=NoSuchUser",
        "user_unknown",
    ),
    (
        "5.2.1",
        "550-5.2.1 The email account that you tried to reach is disabled. For more information, go to "
        "https://support.google.com/mail/?p=DisabledUser",
        "mailbox_disabled",
    ),
    ("5.2.2", "552-5.2.2 The recipient's inbox is out of storage space and inactive.", "mailbox_full"),
    (
        "5.7.26",
        "550-5.7.26 Unauthenticated email from example.org is not accepted due to domain's DMARC policy. Please "
        "contact the administrator of example.org domain.",
        "policy",
    ),
    (
        "5.7.1",
        "550-5.7.1 [{ip}] Our system has detected that this message is likely unsolicited mail. To reduce the "
        "amount of spam sent to Gmail, this message has been blocked.",
        "spam_content",
    ),
    (
        "5.7.1",
        "550-5.7.1 [{ip}] The IP you're using to send mail is not authorized to send email directly to our "
        "servers. Please use the SMTP relay at your service provider instead.",
        "policy",
    ),
    (
        "4.7.28",
        "421-4.7.28 [{ip}] Gmail has detected an unusual rate of mail originating from your IP address. To protect "
        "our users, mail sent from your IP address has been temporarily rate limited.",
        "rate_limited",
    ),
    (
        "5.7.25",
        "550-5.7.25 [{ip}] The IP address sending this message does not have a PTR record setup.",
        "policy",
    ),
]

MICROSOFT: list[D] = [
    (
        "5.1.10",
        "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
        "user_unknown",
    ),
    ("5.1.1", "550 5.1.1 RESOLVER.ADR.RecipNotFound; not found", "user_unknown"),
    ("5.2.2", "554 5.2.2 mailbox full; STOREDRV.Deliver.Exception:QuotaExceededException", "mailbox_full"),
    (
        "5.7.1",
        "550 5.7.1 Unfortunately, messages from [{ip}] weren't sent. Please contact your Internet service provider "
        "since part of their network is on our block list (S3140).",
        "blocked",
    ),
    (
        "5.7.509",
        "550 5.7.509 Access denied, sending domain example.org does not pass DMARC verification and has a DMARC "
        "policy of reject.",
        "policy",
    ),
    ("5.7.606", "550 5.7.606 Access denied, banned sending IP [{ip}].", "blocked"),
    ("5.2.3", "550 5.2.3 RESOLVER.RST.RecipSizeLimit; message too large for this recipient", "too_big"),
    ("4.4.7", "450 4.4.7 Message delayed; the server gave up after retrying for 2 days", "expired"),
]

YAHOO: list[D] = [
    ("5.0.0", "554 delivery error: dd This user doesn't have a yahoo.com account ({r}) [0]", "user_unknown"),
    ("5.0.0", "552 1 Requested mail action aborted, mailbox not found", "user_unknown"),
    (
        "5.7.9",
        "553 5.7.2 [TSS09] All messages from {ip} will be permanently deferred; Retrying will NOT succeed.",
        "blocked",
    ),
    (
        "5.7.9",
        "554 5.7.9 Message not accepted for policy reasons. See https://postmaster.yahooinc.com",
        "policy",
    ),
    (
        "4.7.0",
        "421 4.7.0 [TSS04] Messages from {ip} temporarily deferred due to unexpected volume",
        "blocked",
    ),
    (
        "5.0.0",
        "554 delivery error: dd Sorry your message to {r} cannot be delivered. This mailbox is disabled (554.30)",
        "mailbox_disabled",
    ),
]

JAPAN: list[D] = [
    ("5.0.0", "550 Unknown user {r}", "user_unknown"),
    ("5.0.0", "550 <{r}>: User unknown", "user_unknown"),
    ("5.0.0", "552 Mailbox is full", "mailbox_full"),
    (
        "5.0.0",
        "554 Message rejected: the sender is blocked by the user's reception setting (domain filter)",
        "blocked",
    ),
]

OTHER_PROVIDERS: list[D] = [
    (
        "5.1.1",
        "550 5.1.1 <{r}>: Recipient address rejected: User unknown in local recipient table",
        "user_unknown",
    ),
    (
        "5.0.0",
        "554 {ip} rejected due to poor reputation. Please see https://postmaster.example.net/RL000001",
        "blocked",
    ),
    ("5.7.1", "550 5.7.1 Rejected by header based Anti-Spoofing policy", "policy"),
    ("5.4.7", "554 5.4.7 Delivery expired (message too old) 'timeout'", "expired"),
    ("4.2.2", "452 4.2.2 Mailbox full", "mailbox_full"),
    (
        "5.7.1",
        "550 5.7.1 Message blocked: the URL in your message is listed on a URL blocklist",
        "spam_content",
    ),
    ("5.4.4", "550 5.4.4 Unrouteable address: domain does not exist", "host_unknown"),
    ("5.7.0", "554 5.7.0 Reject, id=12345-01 - INFECTED: Eicar-Test-Signature (virus)", "spam_content"),
]


def pick(pool: list[D], *indexes: int) -> list[D]:
    return [pool[i % len(pool)] for i in indexes]
