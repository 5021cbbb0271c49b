"""The corpus's MTA and provider families: how each one writes a bounce, delay warning or feedback report, after
its documentation (NOTICE names the documents). Each generator yields cases: the raw mail, the expected kind,
reason and failed recipients, and the source the format was written from."""

from __future__ import annotations

import json
from collections.abc import Iterator

from diagnostics import GENERIC, GMAIL, JAPAN, MICROSOFT, OTHER_PROVIDERS, YAHOO, pick

VERP = "b-tq3ah7xk2m4r5s6t7u8v9w0y1zab2cdef3ghij4kl@bounces.acme.test"
FROM = "hello@acme.test"
IP = "192.0.2.10"
KIND = {
    "user_unknown": "hard",
    "host_unknown": "hard",
    "mailbox_disabled": "hard",
    "mailbox_full": "soft",
    "expired": "soft",
    "other": "soft",
    "blocked": "block",
    "policy": "block",
    "spam_content": "block",
    "too_big": "block",
    "rate_limited": "block",
}
DATE = "Mon, 30 Nov 2026 10:15:02 +0000"
_counter = iter(range(1, 10_000))


def rcpt() -> str:
    n = next(_counter)
    local = ["jane.doe", "m.rossi", "k.tanaka", "olaf", "p.nguyen", "sales", "a.kowalska", "li.wei"][n % 8]
    return f"{local}{n}@{['example.com', 'example.net', 'example.org'][n % 3]}"


def original_headers(to: str) -> str:
    return (
        f"Return-Path: <{VERP}>\n"
        f"From: Acme <{FROM}>\n"
        f"To: {to}\n"
        "Subject: Your November newsletter\n"
        f"Message-ID: <0f3c9a1e.campaign@acme.test>\n"
        "Date: Mon, 30 Nov 2026 10:15:00 +0000\n"
        "MIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=utf-8\n"
    )


def fill(text: str, r: str) -> str:
    return text.replace("{r}", r).replace("{ip}", IP)


def case(
    family: str, slug: str, raw: str, kind: str, reason: str, recipients: list[str], source: str
) -> dict:
    return {
        "family": family,
        "slug": slug,
        "raw": raw,
        "kind": kind,
        "reason": reason,
        "recipients": recipients,
        "source": source,
    }


# --- RFC 3464 multipart/report families --------------------------------------------------------------------


DSN_FAMILIES = {
    "postfix": {
        "from": "MAILER-DAEMON@mx1.example.net (Mail Delivery System)",
        "subject": "Undelivered Mail Returned to Sender",
        "mta": "mx1.example.net",
        "intro": "This is the mail system at host mx1.example.net.\n\nI'm sorry to have to inform you that your "
        "message could not\nbe delivered to one or more recipients. It's attached below.\n\n"
        "                   The mail system\n\n<{r}>: host mx2.example.net[198.51.100.7] said: {d} (in reply to "
        "RCPT TO command)\n",
        "extra": "X-Postfix-Queue-ID: 4F2A81C0021\nX-Postfix-Sender: rfc822; " + VERP + "\n",
        "source": "Postfix bounce(5) default templates; RFC 3464",
        "diags": pick(GENERIC, 0, 2, 3, 5, 6, 7),
    },
    "sendmail": {
        "from": "Mail Delivery Subsystem <MAILER-DAEMON@relay.example.net>",
        "subject": "Returned mail: see transcript for details",
        "mta": "relay.example.net",
        "intro": "The original message was received at Mon, 30 Nov 2026 10:15:00 GMT\nfrom localhost [127.0.0.1]"
        "\n\n   ----- The following addresses had permanent fatal errors -----\n<{r}>\n    (reason: {d})\n\n"
        "   ----- Transcript of session follows -----\n... while talking to mx.example.net.:\n>>> DATA\n<<< {d}\n",
        "extra": "Received-From-MTA: DNS; localhost\n",
        "source": "sendmail 8 DSN (RFC 3464) with its transcript text",
        "diags": pick(GENERIC, 1, 4, 8, 9, 10),
    },
    "exchange": {
        "from": "postmaster@mail.example.net",
        "subject": "Undeliverable: Your November newsletter",
        "mta": "EX01.corp.example.net",
        "intro": "Delivery has failed to these recipients or groups:\n\n{r}\nThe e-mail address you entered "
        "couldn't be found. Please check the recipient's e-mail address and try to resend the message.\n\n"
        "Diagnostic information for administrators:\n\nGenerating server: EX01.corp.example.net\n\n{r}\n"
        "Remote Server returned '{d}'\n",
        "extra": "",
        "source": "Microsoft Exchange Server NDR format (docs.microsoft.com, 'Email non-delivery reports')",
        "diags": pick(MICROSOFT, 0, 2, 4, 6),
    },
    "office365": {
        "from": "Microsoft Outlook <MicrosoftExchange329e71ec88ae4615bbc36ab6ce41109e@tenant.example.com>",
        "subject": "Undeliverable: Your November newsletter",
        "mta": "DM6PR01MB1234.namprd01.prod.outlook.com",
        "intro": "Your message to {r} couldn't be delivered.\n\n{r} wasn't found at example.com.\n\nRemote Server "
        "returned '{d}'\n",
        "extra": "",
        "source": "Exchange Online NDR documentation (learn.microsoft.com, 'NDRs in Exchange Online')",
        "diags": pick(MICROSOFT, 0, 1, 3, 5, 7),
    },
    "outlook_com": {
        "from": "postmaster@outlook.com",
        "subject": "Delivery Status Notification (Failure)",
        "mta": "BN8NAM11HT123.mail.protection.outlook.com",
        "intro": "Delivery has failed to these recipients or groups:\n\n{r}\n\nThe server has tried to deliver "
        "this message, without success.\n\n{d}\n",
        "extra": "",
        "source": "Outlook.com postmaster error codes (sendersupport.olc.protection.outlook.com)",
        "diags": pick(MICROSOFT, 0, 3, 2, 5),
    },
    "gmail": {
        "from": "Mail Delivery Subsystem <mailer-daemon@googlemail.com>",
        "subject": "Delivery Status Notification (Failure)",
        "mta": "mx.google.com",
        "intro": "** Message not delivered **\n\nThere was a problem delivering your message to {r}. See the "
        "technical details below.\n\nThe response from the remote server was:\n{d}\n",
        "extra": "X-Google-Original-From: " + FROM + "\n",
        "source": "Google Workspace 'SMTP error reference' (support.google.com/a/answer/3726730)",
        "diags": pick(GMAIL, 0, 1, 2, 3, 4, 5, 7),
    },
    "icloud": {
        "from": "MAILER-DAEMON@mr85p00im-ztdg06021101.me.com (Mail Delivery System)",
        "subject": "Undelivered Mail Returned to Sender",
        "mta": "mr85p00im-ztdg06021101.me.com",
        "intro": "This is the mail system at host me.com.\n\nI'm sorry to have to inform you that your message "
        "could not\nbe delivered to one or more recipients.\n\n<{r}>: {d}\n",
        "extra": "",
        "source": "Postfix-based DSN as iCloud Mail sends it (RFC 3464)",
        "diags": pick(OTHER_PROVIDERS, 0, 3, 4),
    },
    "gmx": {
        "from": "Mail Delivery System <mailer-daemon@gmx.net>",
        "subject": "Mail delivery failed: returning message to sender",
        "mta": "mout.gmx.net",
        "intro": "This message was created automatically by mail delivery software.\n\nA message that you sent "
        "could not be delivered to one or more of\nits recipients. This is a permanent error.\n\n{r}:\n"
        "    SMTP error from remote server for RCPT TO command, host: mx.example.com reason: {d}\n",
        "extra": "",
        "source": "GMX/web.de mout DSN (RFC 3464)",
        "diags": pick(OTHER_PROVIDERS, 1, 2, 6),
    },
    "zoho": {
        "from": "mailer-daemon@mx.zoho.com",
        "subject": "Undelivered Mail Returned to Sender",
        "mta": "mx.zoho.com",
        "intro": "This message was created automatically by mail delivery software.\n\nA message that you "
        "sent could not be delivered to one or more of its recipients.\n\n{r}, ERROR CODE :{d}\n",
        "extra": "",
        "source": "Zoho Mail bounce format (RFC 3464)",
        "diags": pick(GENERIC, 0, 3, 5),
    },
    "mdaemon": {
        "from": "MDaemon@mail.example.net",
        "subject": "Permanent Delivery Failure",
        "mta": "mail.example.net",
        "intro": "The attached message had PERMANENT fatal delivery errors!\n\nAfter one or more unsuccessful "
        "delivery attempts the attached message has been removed from the mail queue on this server.\n\n"
        "--- Session Transcript ---\n  RCPT To:<{r}>\n  {d}\n--- End Transcript ---\n",
        "extra": "",
        "source": "MDaemon Messaging Server DSN (RFC 3464)",
        "diags": pick(GENERIC, 1, 4, 9),
    },
    "domino": {
        "from": "Mail Router <postmaster@notes.example.net>",
        "subject": "DELIVERY FAILURE: User {r} not listed in Domino Directory",
        "mta": "notes.example.net",
        "intro": "Your message\n\n  Subject: Your November newsletter\n\nwas not delivered to:\n\n  {r}\n\n"
        "because:\n\n  {d}\n",
        "extra": "",
        "source": "HCL Domino router DSN (RFC 3464 mode)",
        "diags": [("5.1.1", "User {r} not listed in Domino Directory", "user_unknown")] + pick(GENERIC, 3, 9),
    },
    "mimecast": {
        "from": "postmaster@eu-smtp-delivery-1.mimecast.com",
        "subject": "Mimecast Delivery Failure",
        "mta": "eu-smtp-delivery-1.mimecast.com",
        "intro": "Your message couldn't be delivered to the following recipient:\n\n{r}\n\nReason: {d}\n",
        "extra": "",
        "source": "Mimecast SMTP error codes (community.mimecast.com knowledge base)",
        "diags": [("5.7.1", "550 Rejected by header based Anti-Spoofing policy", "policy")]
        + pick(OTHER_PROVIDERS, 5, 0),
    },
    "barracuda": {
        "from": "Barracuda Email Security Service <bounce@barracuda.example.net>",
        "subject": "Undeliverable message",
        "mta": "d123.ess.barracudanetworks.com",
        "intro": "Your message could not be delivered to {r}.\n\n{d}\n",
        "extra": "",
        "source": "Barracuda Email Security Gateway bounce (RFC 3464)",
        "diags": [
            ("5.7.1", "550 permanent failure for one or more recipients ({r}:blocked)", "blocked"),
            (
                "5.7.1",
                "554 5.7.1 Message rejected due to content restrictions: spam score exceeded",
                "spam_content",
            ),
        ]
        + pick(GENERIC, 0),
    },
    "proofpoint": {
        "from": "MAILER-DAEMON@pps.example.net",
        "subject": "Undeliverable: Your November newsletter",
        "mta": "mx0a-001.pphosted.example.net",
        "intro": "The following message to <{r}> was undeliverable.\nThe reason for the problem:\n{d}\n",
        "extra": "",
        "source": "Proofpoint Protection Server DSN (RFC 3464)",
        "diags": [
            ("5.7.1", "554 5.7.1 Blocked - see https://ipcheck.proofpoint.com/?ip={ip}", "blocked"),
        ]
        + pick(GENERIC, 0, 3),
    },
    "ironport": {
        "from": "Mail Delivery System <MAILER-DAEMON@esa1.example.net>",
        "subject": "Delivery Status Notification (Failure)",
        "mta": "esa1.example.net",
        "intro": "The message you sent to example.com/{r} was rejected.\n\n{d}\n",
        "extra": "",
        "source": "Cisco Secure Email (IronPort) bounce profile (RFC 3464)",
        "diags": pick(OTHER_PROVIDERS, 1, 7, 0),
    },
    "amazon_ses": {
        "from": "MAILER-DAEMON@amazonses.com",
        "subject": "Delivery Status Notification (Failure)",
        "mta": "a27-1.smtp-out.us-west-2.amazonses.com",
        "intro": "An error occurred while trying to deliver the mail to the following recipients:\n{r}\n",
        "extra": "",
        "source": "Amazon SES bounce DSN (docs.aws.amazon.com/ses, 'Amazon SES notification contents')",
        "diags": pick(GENERIC, 0, 3, 5, 11),
    },
    "haraka": {
        "from": "MAILER-DAEMON@haraka.example.net",
        "subject": "Returned mail: see transcript for details",
        "mta": "haraka.example.net",
        "intro": "Your message to {r} could not be delivered.\n\n{d}\n",
        "extra": "",
        "source": "Haraka bounce plugin (RFC 3464)",
        "diags": pick(OTHER_PROVIDERS, 2, 4, 6),
    },
    "momentum": {
        "from": "MAILER-DAEMON@mta.example.net",
        "subject": "Delivery failure",
        "mta": "mta.example.net",
        "intro": "This is a delivery failure notification message indicating that\nan email you addressed "
        "to {r} could not be delivered.\n\n{d}\n",
        "extra": "",
        "source": "Momentum/Ecelerity DSN (RFC 3464)",
        "diags": pick(GENERIC, 1, 5, 9, 10),
    },
}


def dsn_mail(
    family: dict, blocks: list[tuple[str, str, str | None, str | None]], intro_r: str, intro_d: str
) -> str:
    """A multipart/report; blocks are (recipient, action, status, diagnostic)."""
    boundary = "=_report_9f8e7d"
    fields = []
    for r, action, status, diag in blocks:
        lines = [f"Final-Recipient: rfc822; {r}", f"Original-Recipient: rfc822;{r}", f"Action: {action}"]
        if status:
            lines.append(f"Status: {status}")
        lines.append(f"Remote-MTA: dns; mx.{r.rpartition('@')[2]}")
        if diag:
            lines.append(f"Diagnostic-Code: smtp; {diag}")
        lines.append(f"Last-Attempt-Date: {DATE}")
        fields.append("\n".join(lines))
    intro = fill(family["intro"].replace("{d}", intro_d), intro_r)
    subject = fill(family["subject"], intro_r)
    return (
        f"Return-Path: <>\nReceived: from {family['mta']} (unknown [198.51.100.7])\n\tby bounce-intake.acme.test "
        f"with ESMTP; {DATE}\nDate: {DATE}\nFrom: {family['from']}\nSubject: {subject}\nTo: {VERP}\n"
        "Auto-Submitted: auto-replied\nMIME-Version: 1.0\n"
        f'Content-Type: multipart/report; report-type=delivery-status;\n\tboundary="{boundary}"\n'
        f"Message-ID: <report.{next(_counter)}@{family['mta']}>\n\nThis is a MIME-encapsulated message.\n\n"
        f"--{boundary}\nContent-Description: Notification\nContent-Type: text/plain; charset=us-ascii\n\n{intro}\n"
        f"--{boundary}\nContent-Description: Delivery report\nContent-Type: message/delivery-status\n\n"
        f"Reporting-MTA: dns; {family['mta']}\n{family['extra']}Arrival-Date: {DATE}\n\n"
        + "\n\n".join(fields)
        + f"\n\n--{boundary}\nContent-Description: Undelivered Message Headers\nContent-Type: text/rfc822-headers\n\n"
        f"{original_headers(blocks[0][0])}\n--{boundary}--\n"
    )


def dsn_cases() -> Iterator[dict]:
    for name, family in DSN_FAMILIES.items():
        for status, diag, reason in family["diags"]:
            r = rcpt()
            d = fill(diag, r)
            action = "failed"
            raw = dsn_mail(family, [(r, action, status, d)], r, d)
            yield case(name, reason, raw, KIND[reason], reason, [r], family["source"])


# --- prose families --------------------------------------------------------------------------------------


def plain(
    from_: str, subject: str, body: str, *, headers: str = "", original: bool = True, r: str = ""
) -> str:
    tail = ""
    if original:
        tail = (
            "\n------ This is a copy of the message, including all the headers. ------\n\n"
            + original_headers(r)
        )
        tail += "\nHello, here is our newsletter.\n"
    return (
        f"Return-Path: <>\nDate: {DATE}\nFrom: {from_}\nTo: {VERP}\nSubject: {subject}\n{headers}"
        f"Message-ID: <prose.{next(_counter)}@bounce.example.net>\nMIME-Version: 1.0\n"
        f"Content-Type: text/plain; charset=us-ascii\n\n{body}{tail}"
    )


PROSE = {
    "exim": (
        "Mail Delivery System <Mailer-Daemon@mail.example.net>",
        "Mail delivery failed: returning message to sender",
        "This message was created automatically by mail delivery software.\n\nA message that you sent could not "
        "be delivered to one or more of its\nrecipients. This is a permanent error. The following address(es) "
        "failed:\n\n  {r}\n    host mx.example.com [198.51.100.9]\n    SMTP error from remote mail server after "
        "RCPT TO:<{r}>:\n    {d}\n",
        "Exim 4 specification, chapter 'Bounce messages' (exim.org)",
        pick(GENERIC, 0, 3, 5, 7, 9),
    ),
    "qmail": (
        "MAILER-DAEMON@mail.example.net",
        "failure notice",
        "Hi. This is the qmail-send program at mail.example.net.\nI'm afraid I wasn't able to deliver your message "
        "to the following addresses.\nThis is a permanent error; I've given up. Sorry it didn't work out.\n\n"
        "<{r}>:\n198.51.100.9 does not like recipient.\nRemote host said: {d}\nGiving up on 198.51.100.9.\n",
        "qmail-send bounce format (cr.yp.to/proto/qsbmf.txt)",
        pick(GENERIC, 1, 2, 4, 6),
    ),
    "yahoo": (
        "MAILER-DAEMON@yahoo.com",
        "Failure Notice",
        "Sorry, we were unable to deliver your message to the following address.\n\n<{r}>:\n"
        "Remote host said: {d} [RCPT_TO]\n",
        "Yahoo Mail 'Failure Notice' and postmaster.yahooinc.com SMTP error codes",
        pick(YAHOO, 0, 1, 2, 3, 5),
    ),
    "office365_prose": (
        "Microsoft Outlook <postmaster@tenant.example.com>",
        "Undeliverable: Your November newsletter",
        "Your message to {r} couldn't be delivered.\n\nThe recipient wasn't found.\n\nHow to Fix It\n"
        "Check the address and send the message again.\n\nDiagnostic information for administrators:\n\n"
        "Generating server: AM0PR01MB1234.eurprd01.prod.exchangelabs.com\n{r}\nRemote Server returned '{d}'\n",
        "Exchange Online NDR documentation (learn.microsoft.com)",
        pick(MICROSOFT, 0, 1, 3, 4),
    ),
    "opensmtpd": (
        "Mailer Daemon <MAILER-DAEMON@smtpd.example.net>",
        "Delivery status notification: error",
        "Hi!\n\nThis is the MAILER-DAEMON, please DO NOT REPLY to this email.\n\nAn error has occurred while "
        "attempting to deliver a message for\nthe following list of recipients:\n\n{r}: {d}\n\nBelow is a copy of "
        "the original message:\n",
        "OpenSMTPD bounce.c message texts (man.openbsd.org smtpd)",
        pick(GENERIC, 0, 3, 5),
    ),
    "lotus_notes": (
        "Postmaster <postmaster@notes.example.net>",
        "DELIVERY FAILURE: Error transferring to notes.example.net",
        "Your message\n\n  Subject: Your November newsletter\n\nwas not delivered to:\n\n  {r}\n\nbecause:\n\n"
        "  {d}\n",
        "Lotus Notes/Domino router failure reports",
        [("5.0.0", "User {r} ({r}) not listed in Domino Directory", "user_unknown"), *pick(GENERIC, 3, 5)],
    ),
    "sendmail_v5": (
        "Mail Delivery Subsystem <MAILER-DAEMON@old.example.net>",
        "Returned mail: User unknown",
        "   ----- Transcript of session follows -----\n... while talking to mx.example.com:\n>>> RCPT To:<{r}>\n"
        "<<< {d}\n550 <{r}>... User unknown\n\n   ----- Unsent message follows -----\n",
        "sendmail V5/V8 non-DSN bounce text",
        [("5.0.0", "550 <{r}>... User unknown", "user_unknown")],
    ),
    "courier": (
        "Courier mail server at mx.example.net <@>",
        "NOTICE: mail delivery status.",
        "This is a delivery status notification from mx.example.net,\nrunning the Courier mail server.\n\n"
        "The original message was received on Mon, 30 Nov 2026 10:15:00 +0000\nfrom [198.51.100.1]\n\n"
        "---------------------------------------------------------------------------\n\n"
        "                           UNDELIVERABLE MAIL\n\nYour message to the following recipients cannot be "
        "delivered:\n\n<{r}>:\n    mx.example.com [198.51.100.9]:\n>>> RCPT TO:<{r}>\n<<< {d}\n",
        "Courier MTA DSN text (courier-mta.org)",
        pick(GENERIC, 1, 5, 3),
    ),
    "docomo": (
        "Mail Delivery Subsystem <MAILER-DAEMON@docomo.example.jp>",
        "Returned mail: see transcript for details",
        "The following recipients haven't received this message:\n\n{r}\n\n  {d}\n",
        "NTT docomo returned-mail format (sisimai test-set families, re-written)",
        pick(JAPAN, 0, 2, 3),
    ),
    "au_ezweb": (
        "MAILER-DAEMON@ezweb.example.jp",
        "Mail System Error - Returned Mail",
        "Your mail sent on: Mon, 30 Nov 2026 19:15:00 +0900\n  could not be delivered to the following "
        "addresses:\n\n  {r}\n  {d}\n",
        "au (KDDI) ezweb returned-mail format",
        pick(JAPAN, 1, 2),
    ),
    "softbank": (
        "Postmaster <postmaster@softbank.example.jp>",
        "Undeliverable Message",
        "Unable to deliver message to the following address(es).\n\n<{r}>:\n{d}\n",
        "SoftBank returned-mail format",
        pick(JAPAN, 0, 3),
    ),
    "postfix_prose": (
        "MAILER-DAEMON@mx1.example.net (Mail Delivery System)",
        "Undelivered Mail Returned to Sender",
        "This is the mail system at host mx1.example.net.\n\nI'm sorry to have to inform you that your message "
        "could not\nbe delivered to one or more recipients.\n\n<{r}>: host mx.example.com[198.51.100.9] said: {d}"
        " (in reply to RCPT TO command)\n",
        "Postfix bounce(5) text without the MIME report (relays that strip the structure)",
        pick(GENERIC, 0, 2, 4, 6, 8),
    ),
    "mercury": (
        "Mercury 32 <postmaster@mercury.example.net>",
        "Delivery failure",
        "This message is a delivery failure report.\n\nThe following addresses had delivery problems:\n\n<{r}>\n"
        "   Permanent failure: {d}\n",
        "Mercury/32 delivery failure reports",
        pick(GENERIC, 1, 3),
    ),
    "groupwise": (
        "Mail Delivery System <postmaster@gw.example.net>",
        "Message status - undeliverable",
        "The message that you sent was undeliverable to the following:\n\t{r} ({d})\n",
        "Novell GroupWise status messages",
        pick(GENERIC, 0, 5),
    ),
    "mailru": (
        "Mail Delivery System <mailer-daemon@corp.mail.example.ru>",
        "Mail failure.",
        "This message was created automatically by mail delivery software.\n\nA message that you sent could not "
        "be delivered to one or more of its\nrecipients. This is a permanent error. The following address(es) "
        "failed:\n\n {r}\n SMTP error from remote mail server after end of data:\n {d}\n",
        "Exim-based bounce as Mail.ru sends it",
        pick(OTHER_PROVIDERS, 0, 1),
    ),
}


def prose_cases() -> Iterator[dict]:
    for name, (from_, subject, body, source, diags) in PROSE.items():
        for status, diag, reason in diags:
            r = rcpt()
            d = fill(diag, r)
            raw = plain(from_, subject, fill(body.replace("{d}", d), r), r=r)
            yield case(name, reason, raw, KIND[reason], reason, [r], source)


# --- delay warnings, oddities, feedback, not-bounces --------------------------------------------------------


def delay_cases() -> Iterator[dict]:
    src = "RFC 3464 delayed DSN / MTA warning texts"
    pf = DSN_FAMILIES["postfix"] | {"subject": "Delayed Mail (still being retried)"}
    for status, diag in (
        ("4.4.1", "connect to mx.example.com[198.51.100.9]:25: Connection timed out"),
        ("4.2.2", "452 4.2.2 Mailbox full"),
        ("4.7.0", "421 4.7.0 Try again later, closing connection."),
    ):
        r = rcpt()
        pf2 = pf | {
            "intro": "This is the mail system at host mx1.example.net.\n\n####################################"
            "################################\n# THIS IS A WARNING ONLY.  YOU DO NOT NEED TO RESEND YOUR MESSAGE. #\n"
            "####################################################################\n\nYour message could not be "
            "delivered for more than 4 hour(s).\nIt will be retried until it is 5 day(s) old.\n\n<{r}>: {d}\n"
        }
        yield case(
            "postfix",
            "delayed",
            dsn_mail(pf2, [(r, "delayed", status, diag)], r, diag),
            "delayed",
            "delayed",
            [r],
            src,
        )
    for subject, body, family in (
        (
            "Warning: could not send message for past 4 hours",
            "    **********************************************\n    **      THIS IS A WARNING MESSAGE ONLY      **\n"
            "    **  YOU DO NOT NEED TO RESEND YOUR MESSAGE  **\n    **********************************************\n\n"
            "The original message was received at Mon, 30 Nov 2026 06:15:00 GMT\n\n   ----- Transcript of session "
            "follows -----\n<{r}>... Deferred: Connection timed out with mx.example.com.\nWarning: message still "
            "undelivered after 4 hours\nWill keep trying until message is 5 days old\n",
            "sendmail",
        ),
        (
            "Warning: message 1kXyZa-0004Qd-Lm delayed 24 hours",
            "This message was created automatically by mail delivery software.\nA message that you sent has not yet "
            "been delivered to one or more of its\nrecipients after more than 24 hours on the queue on mail.example.net."
            "\n\n  {r}\n    Delay reason: SMTP error from remote mail server after RCPT TO:<{r}>:\n    451 4.7.1 "
            "Greylisted, try again later\n\nNo action is required on your part. Delivery attempts will continue.\n",
            "exim",
        ),
        (
            "Delayed Mail (still being retried)",
            "This is the mail system at host mx1.example.net.\n\n# THIS IS A WARNING ONLY.  YOU DO NOT NEED TO "
            "RESEND YOUR MESSAGE. #\n\nYour message could not be delivered for more than 3 hour(s).\nIt will be "
            "retried until it is 5 day(s) old.\n\n<{r}>: host mx.example.com[198.51.100.9] said: 450 4.2.0 <{r}>: "
            "Recipient address rejected: Greylisted (in reply to RCPT TO command)\n",
            "postfix_prose",
        ),
        (
            "Delivery delayed: Your November newsletter",
            "Delivery is delayed to these recipients or groups:\n\n{r}\n\nSubject: Your November newsletter\n\n"
            "This message hasn't been delivered yet. Delivery will continue to be attempted.\n\nThe server will "
            "keep trying to deliver this message for the next 1 days, 19 hours and 57 minutes.\n",
            "exchange",
        ),
    ):
        r = rcpt()
        yield case(
            family,
            "delayed",
            plain("MAILER-DAEMON@mail.example.net", subject, fill(body, r), r=r),
            "delayed",
            "delayed",
            [r],
            src,
        )


def _dsn_text(blocks: str) -> str:
    return (
        f"Return-Path: <>\nDate: {DATE}\nFrom: MAILER-DAEMON@appliance.example.net\nTo: {VERP}\n"
        "Subject: Delivery Status Notification\nMIME-Version: 1.0\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"\n\n--b1\n'
        "Content-Type: text/plain\n\nYour message could not be delivered.\n\n--b1\n"
        f"Content-Type: message/delivery-status\n\nReporting-MTA: dns; appliance.example.net\n\n{blocks}\n--b1--\n"
    )


def odd_cases() -> Iterator[dict]:
    src = "RFC 3464 fields as real MTAs miswrite them"
    r = rcpt()
    yield case(
        "appliance",
        "unindented-continuation",
        _dsn_text(
            f"Final-Recipient: rfc822; {r}\nAction: failed\nStatus: 5.0.0\nDiagnostic-Code: smtp; 550 5.1.1 <{r}>:\n"
            "Recipient address rejected: User unknown in local recipient table\n"
        ),
        "hard",
        "user_unknown",
        [r],
        src,
    )
    r = rcpt()
    yield case(
        "appliance",
        "space-before-colon",
        _dsn_text(
            f"Final-Recipient : rfc822; {r}\nAction : failed\nStatus : 5.2.2\nDiagnostic-Code : smtp; 552 Mailbox full\n"
        ),
        "soft",
        "mailbox_full",
        [r],
        src,
    )
    r = rcpt()
    yield case(
        "appliance",
        "action-expired",
        _dsn_text(
            f"Final-Recipient: rfc822; {r}\nAction: expired\nStatus: 4.4.7\nDiagnostic-Code: X-Local; delivery time expired\n"
        ),
        "soft",
        "expired",
        [r],
        src,
    )
    r1, r2 = rcpt(), rcpt()
    yield case(
        "appliance",
        "blocks-without-blank-line",
        _dsn_text(
            f"Final-Recipient: rfc822; {r1}\nAction: failed\nStatus: 5.1.1\nDiagnostic-Code: smtp; 550 5.1.1 user unknown\n"
            f"Final-Recipient: rfc822; {r2}\nAction: failed\nStatus: 5.1.1\nDiagnostic-Code: smtp; 550 5.1.1 no such user\n"
        ),
        "hard",
        "user_unknown",
        [r1, r2],
        src,
    )
    r1, r2 = rcpt(), rcpt()
    yield case(
        "appliance",
        "multi-recipient-mixed",
        _dsn_text(
            f"Final-Recipient: rfc822; {r1}\nAction: failed\nStatus: 5.7.1\nDiagnostic-Code: smtp; 554 5.7.1 "
            f"Service unavailable; Client host [{IP}] blocked using b.barracudacentral.org\n\n"
            f"Final-Recipient: rfc822; {r2}\nAction: failed\nStatus: 5.1.1\nDiagnostic-Code: smtp; 550 5.1.1 user unknown\n"
        ),
        "hard",
        "user_unknown",
        [r2],
        src,
    )
    r = rcpt()
    yield case(
        "appliance",
        "unreadable-report-prose-fallback",
        _dsn_text("this report could not be generated\n").replace(
            "Your message could not be delivered.",
            f"Delivery to the following recipient failed permanently:\n\n     {r}\n\n"
            "Technical details of permanent failure:\n550 5.1.1 The email account that you tried to reach does not exist.",
        ),
        "hard",
        "user_unknown",
        [r],
        src,
    )
    # Amazon WorkMail: the delivery-status fields in a text/plain part.
    for status, diag, reason in pick(GENERIC, 0, 3, 5):
        r = rcpt()
        d = fill(diag, r)
        body = (
            "An error occurred while trying to deliver the mail to the following recipients:\n\n"
            f"Reporting-MTA: dns; a1-23.smtp-out.eu-west-1.amazonses.com\n\nFinal-Recipient: rfc822; {r}\n"
            f"Action: failed\nStatus: {status}\nDiagnostic-Code: smtp; {d}\n"
        )
        yield case(
            "amazon_workmail",
            reason,
            plain("MAILER-DAEMON@workmail.example.com", "Delivery Status Notification (Failure)", body, r=r),
            KIND[reason],
            reason,
            [r],
            "Amazon WorkMail bounce text (docs.aws.amazon.com/workmail)",
        )


def arf_mail(
    recipients: list[str], feedback_type: str = "abuse", agent: str = "Yahoo!-Mail-Feedback/2.0"
) -> str:
    rcpts = "".join(f"Original-Rcpt-To: {r}\n" for r in recipients)
    return (
        f"Return-Path: <feedback@fbl.example.net>\nDate: {DATE}\nFrom: feedback@fbl.example.net\n"
        f"To: fbl@bounces.acme.test\nSubject: FW: Your November newsletter\nMIME-Version: 1.0\n"
        'Content-Type: multipart/report; report-type=feedback-report; boundary="arf"\n\n--arf\n'
        "Content-Type: text/plain\n\nThis is an email abuse report for an email message received from IP "
        f"{IP}.\n\n--arf\nContent-Type: message/feedback-report\n\nFeedback-Type: {feedback_type}\n"
        f"User-Agent: {agent}\nVersion: 1\nSource-IP: {IP}\n{rcpts}Arrival-Date: {DATE}\n\n--arf\n"
        f"Content-Type: message/rfc822\n\n{original_headers(recipients[0])}\nHello\n\n--arf--\n"
    )


def feedback_cases() -> Iterator[dict]:
    src = "RFC 5965 / RFC 6449 feedback reports"
    for agent, family in (
        ("Yahoo!-Mail-Feedback/2.0", "arf_yahoo"),
        ("AOL SComp", "arf_aol"),
        ("Comcast Feedback Loop", "arf_comcast"),
        ("Mail.ru FBL", "arf_mailru"),
    ):
        r = rcpt()
        yield case(family, "complaint", arf_mail([r], agent=agent), "complaint", "complaint", [r], src)
    r1, r2 = rcpt(), rcpt()
    yield case("arf_yahoo", "two-recipients", arf_mail([r1, r2]), "complaint", "complaint", [r1, r2], src)
    r = rcpt()
    yield case("arf_aol", "not-spam", arf_mail([r], "not-spam"), "not_a_bounce", "not_a_bounce", [], src)
    for _ in range(2):
        r = rcpt()
        jmrp = (
            f"Return-Path: <staff@hotmail.com>\nDate: {DATE}\nFrom: staff@hotmail.com\nTo: fbl@bounces.acme.test\n"
            'Subject: complaint about message from 192.0.2.10\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="j"\n'
            "\n--j\nContent-Type: text/plain\n\nThis is a Junk Mail Reporting Program complaint.\n\n--j\n"
            f"Content-Type: message/rfc822\n\nX-HmXmrOriginalRecipient: <{r}>\n{original_headers(r)}\nHello\n\n--j--\n"
        )
        yield case("jmrp", "complaint", jmrp, "complaint", "complaint", [r], "Microsoft JMRP report format")


def ses_json(doc: dict, envelope: bool) -> str:
    body = json.dumps(doc, indent=1)
    if envelope:
        body = json.dumps({"Type": "Notification", "MessageId": "6f3e-1", "Message": body}, indent=1)
    return (
        f"Return-Path: <no-reply@sns.amazonaws.com>\nDate: {DATE}\nFrom: AWS Notifications <no-reply@sns.amazonaws.com>\n"
        f"To: {VERP}\nSubject: AWS Notification Message\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n\n{body}\n"
    )


def ses_cases() -> Iterator[dict]:
    src = "Amazon SES notification contents (docs.aws.amazon.com/ses/latest/dg/notification-contents.html)"
    for envelope, (btype, sub, status, diag, reason) in [
        (True, ("Permanent", "General", "5.1.1", "smtp; 550 5.1.1 user unknown", "user_unknown")),
        (
            False,
            (
                "Permanent",
                "Suppressed",
                "5.1.1",
                "Amazon SES has suppressed sending to this address",
                "user_unknown",
            ),
        ),
        (True, ("Transient", "MailboxFull", "4.2.2", "smtp; 452 4.2.2 Mailbox full", "mailbox_full")),
        (
            False,
            ("Transient", "General", "5.7.1", "smtp; 554 5.7.1 blocked using zen.spamhaus.org", "blocked"),
        ),
        (True, ("Permanent", "General", "5.7.1", "smtp; 550 5.7.1 Message rejected as spam", "spam_content")),
    ]:
        r = rcpt()
        doc = {
            "notificationType": "Bounce",
            "bounce": {
                "bounceType": btype,
                "bounceSubType": sub,
                "bouncedRecipients": [{"emailAddress": r, "status": status, "diagnosticCode": diag}],
            },
            "mail": {"source": FROM, "destination": [r]},
        }
        yield case("amazon_sns", reason, ses_json(doc, envelope), KIND[reason], reason, [r], src)
    r = rcpt()
    doc = {"notificationType": "Complaint", "complaint": {"complainedRecipients": [{"emailAddress": r}]}}
    yield case("amazon_sns", "complaint", ses_json(doc, True), "complaint", "complaint", [r], src)
    r = rcpt()
    doc = {"notificationType": "Delivery", "delivery": {"recipients": [r]}, "mail": {"destination": [r]}}
    yield case("amazon_sns", "delivery", ses_json(doc, False), "not_a_bounce", "not_a_bounce", [], src)


def not_bounce_cases() -> Iterator[dict]:
    src = "RFC 3834 auto-replies; MTA positive DSNs; challenge-response services"
    for subject, headers, family in (
        (
            "Automatic reply: Your November newsletter",
            "X-Auto-Response-Suppress: All\nAuto-Submitted: auto-generated\n",
            "exchange_oof",
        ),
        ("Out of Office: Your November newsletter", "X-Auto-Response-Suppress: All\n", "exchange_oof"),
        ("On vacation", "Auto-Submitted: auto-replied\nPrecedence: bulk\n", "vacation"),
        ("Re: Your November newsletter", "Auto-Submitted: auto-replied\nX-Autoreply: yes\n", "vacation"),
        ("Abwesenheitsnotiz: Your November newsletter", "", "vacation"),
        ("Please verify your email address", "X-Boxbe-Challenge: yes\n", "challenge"),
        ("Is your message legitimate?", "", "challenge"),
    ):
        r = rcpt()
        raw = (
            f"Return-Path: <{r}>\nDate: {DATE}\nFrom: Someone <{r}>\nTo: {VERP}\nSubject: {subject}\n{headers}"
            "MIME-Version: 1.0\nContent-Type: text/plain\n\nI am away until Monday with no access to email. For urgent "
            "matters please call the office.\n"
        )
        yield case(family, "auto-reply", raw, "auto_reply", "auto_reply", [], src)
    pf = DSN_FAMILIES["postfix"] | {
        "subject": "Successful Mail Delivery Report",
        "intro": "Your message was delivered to <{r}>.\n",
    }
    for action in ("delivered", "relayed", "expanded"):
        r = rcpt()
        yield case(
            "postfix",
            f"positive-{action}",
            dsn_mail(pf, [(r, action, "2.0.0", "250 2.0.0 Ok: queued as 4F2A8")], r, ""),
            "not_a_bounce",
            "not_a_bounce",
            [],
            src,
        )
    r = rcpt()
    raw = (
        f"Return-Path: <{r}>\nDate: {DATE}\nFrom: Jane <{r}>\nTo: {VERP}\nSubject: Re: Your November newsletter\n"
        "MIME-Version: 1.0\nContent-Type: text/plain\n\nThanks! Could you send me the price list? My colleague "
        "at sales@example.com would like it too.\n"
    )
    yield case(
        "human_reply", "reply", raw, "not_a_bounce", "not_a_bounce", [], "a person answering the return path"
    )


def all_cases() -> list[dict]:
    return [
        *dsn_cases(),
        *prose_cases(),
        *delay_cases(),
        *odd_cases(),
        *feedback_cases(),
        *ses_cases(),
        *not_bounce_cases(),
    ]
