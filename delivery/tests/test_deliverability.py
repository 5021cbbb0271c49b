"""What we send passes the receivers' checks, one message of each class (campaign and automation: marketing;
API transactional; agent reply) sent through the SMTP provider to the real loopback SMTP sink:

- the DKIM signature verifies with dkimpy against the published key (a DNS stub answers from the records the
  operator was told to publish — no network), and its `h=` list covers the one-click pair, `Feedback-ID`,
  `Precedence` and an oversigned From;
- the class headers are right (bulk markers, `List-Id`, `Feedback-ID`, one-click `List-Unsubscribe` over https
  for marketing mail only; `Auto-Submitted: auto-replied` for replies; the class in the Message-ID);
- no text part is base64;
- SpamAssassin's local-only run (Debian's `spamassassin`, its shipped rules) scores each under 2 with no
  `HTML_IMAGE_ONLY_*` hit (skipped where SpamAssassin is not installed).
"""

from __future__ import annotations

import email
import email.policy
import re
import shutil
import subprocess
import uuid

import dkim
import pytest
from dkim.util import parse_tag_value

from delivery.services import CampaignSendContext
from delivery.worker import dispatch_batch
from owlat.domains import signing
from owlat.domains.verification import domain_check, domain_register
from owlat.models import Domain

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TOPIC = "6f1c9a52-3b7e-4d0a-9c55-0b7d2f4e8a11"
BODY = (
    "<html><head><style>p{color:#333333}</style></head><body>"
    "<h1>Spring update from Acme</h1>"
    "<p>Hi {{firstName|'there'}}, here is what changed this month in your Acme account.</p>"
    "<p>We shipped faster exports, a calmer dashboard and better search across your projects. "
    "Thank you for the feedback that shaped these changes.</p>"
    '<p><a href="https://example.org/changelog">Read the full changelog</a></p>'
    "</body></html>"
)


@pytest.fixture
def signing_domain(org, dns_stand_in, settings):
    """acme.test registered, its records published in the DNS stand-in and verified: it signs."""
    settings.SITE_URL = "https://owlat.example"
    settings.EMAIL_PROVIDER = "smtp"
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    settings.DELIVERY_CAMPAIGN_RATE = 0
    signing.clear_cache()
    Domain.objects.filter(organization=org).delete()
    domain = Domain.objects.create(organization=org, domain="acme.test")
    domain_register(domain, actor="test")
    domain.refresh_from_db()
    dns_stand_in.publish(domain.dns_records)
    assert domain_check(domain, actor="test").to_state == "verified"
    domain.refresh_from_db()
    yield domain
    signing.clear_cache()


def dns_stub(domain: Domain):
    """dkimpy's `dnsfunc`: TXT answers from the records the domain page tells the operator to publish."""
    published = {r["name"].lower(): r["value"] for r in domain.dns_records if r["type"] == "TXT"}

    def lookup(name: bytes, timeout: int = 5) -> bytes | None:
        value = published.get(name.decode().rstrip(".").lower())
        return value.encode() if value is not None else None

    return lookup


@pytest.fixture
def one_of_each(signing_domain, org, template, make_campaign_send, make_contact, smtp_sink):
    """{class label: received message}: a tracked topic campaign, an automation, an API transactional mail
    and an agent reply, each dispatched through the SMTP provider."""
    from delivery.models import TransactionalSend

    def make_tx_send(kind="transactional", *, contact, **fields):
        return TransactionalSend.objects.create(
            organization=org,
            kind=kind,
            contact=contact,
            email=contact.email,
            from_email="news@acme.test",
            **fields,
        )

    template.html_content = BODY
    template.plain_text_content = ""
    template.save()
    campaign = make_campaign_send(
        make_contact(email="ada@example.com", first_name="Ada"),
        ctx=CampaignSendContext(
            from_email="news@acme.test", from_name="Acme News", topic_id=TOPIC, topic_name="Product news"
        ),
    )
    automation = make_tx_send(
        "automation",
        contact=make_contact(email="bo@example.com", first_name="Bo"),
        automation_id=uuid.uuid4(),
        html_body=BODY.replace("{{firstName|'there'}}", "Bo"),
        text_body="",
        subject="Your Acme spring update",
    )
    transactional = make_tx_send(
        contact=make_contact(email="cy@example.com", first_name="Cy"),
        subject="Your Acme sign-in code",
        html_body="<p>Hello Cy,</p><p>your sign-in code is 481 516. It expires in ten minutes.</p>",
        text_body="Hello Cy,\n\nyour sign-in code is 481 516. It expires in ten minutes.\n",
    )
    reply = make_tx_send(
        "agent_reply",
        contact=make_contact(email="di@example.com", first_name="Di"),
        subject="Re: Invoice question",
        html_body="<p>Hello Di,</p><p>the invoice went out on Monday; you will find it in your account.</p>",
        text_body="Hello Di,\n\nthe invoice went out on Monday; you will find it in your account.\n",
        extra_headers={"In-Reply-To": "<q1@example.com>", "References": "<q1@example.com>"},
    )
    assert dispatch_batch("campaign", [str(campaign.pk)]).sent == 1
    ids = [str(s.pk) for s in (automation, transactional, reply)]
    assert dispatch_batch("transactional", ids).sent == 3
    by_rcpt = {m.rcpt_tos[0]: m for m in smtp_sink.wait_for(4)}
    return {
        "campaign": by_rcpt["ada@example.com"],
        "automation": by_rcpt["bo@example.com"],
        "transactional": by_rcpt["cy@example.com"],
        "reply": by_rcpt["di@example.com"],
    }


def _signed_headers(msg) -> list[str]:
    tags = parse_tag_value(msg["DKIM-Signature"].encode())
    return [h.strip().lower() for h in tags[b"h"].decode().split(":")]


def test_every_class_is_signed_marked_and_encoded_as_receivers_expect(one_of_each, signing_domain, org):
    stub = dns_stub(signing_domain)
    for label, msg in one_of_each.items():
        assert "d=acme.test" in msg["DKIM-Signature"], label
        assert dkim.verify(msg.raw, dnsfunc=stub), label
        signed = _signed_headers(msg)
        assert signed.count("from") == 2, label  # oversigned
        assert {"to", "subject", "date", "message-id", "mime-version", "content-type"} <= set(signed)
        parsed = email.message_from_bytes(msg.raw, policy=email.policy.default)
        for part in parsed.walk():
            if part.get_content_maintype() == "text":
                assert part["Content-Transfer-Encoding"] in ("7bit", "quoted-printable"), label
        if label in ("campaign", "automation"):
            assert msg["Precedence"] == "bulk" and msg["Auto-Submitted"] == "auto-generated"
            assert msg["List-Unsubscribe"].startswith("<https://owlat.example/unsub/")
            assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
            assert msg["Feedback-ID"].startswith(f"{label}:{org.pk}:") and msg["Feedback-ID"].endswith(
                ":owlat"
            )
            assert ".marketing@acme.test>" in msg["Message-ID"]
            assert {
                "list-unsubscribe",
                "list-unsubscribe-post",
                "list-id",
                "feedback-id",
                "precedence",
            } <= set(signed)
            # a path segment starting with a dot is a spam signal
            assert not re.search(r"/unsub/\.", msg["List-Unsubscribe"])
        else:
            for name in ("Precedence", "List-Unsubscribe", "List-Unsubscribe-Post", "List-Id", "Feedback-ID"):
                assert msg[name] is None, (label, name)
        assert (
            f".{ {'campaign': 'marketing', 'automation': 'marketing'}.get(label, label) }@"
            in msg["Message-ID"]
        )
    assert one_of_each["campaign"]["List-Id"] == f"Product news <{TOPIC}.acme.test>"
    assert one_of_each["reply"]["Auto-Submitted"] == "auto-replied"
    assert one_of_each["transactional"]["Auto-Submitted"] is None
    # the short campaign is tracked by its links, without a pixel that would make it look image-only
    campaign_html = one_of_each["campaign"].html()
    assert "/t/c/" in campaign_html and "/t/o/" not in campaign_html
    # tampering with the one-click header breaks the signature (it is covered)
    raw = one_of_each["campaign"].raw.replace(b"List-Unsubscribe=One-Click", b"List-Unsubscribe=Nope")
    assert not dkim.verify(raw, dnsfunc=stub)


SPAMASSASSIN = shutil.which("spamassassin")


def spamassassin_report(raw: bytes) -> tuple[float, list[str]]:
    """(score, rule names) of SpamAssassin's local-only run (`-L`: no network tests) with the shipped rules."""
    out = subprocess.run(
        [SPAMASSASSIN, "-L", "-t"], input=raw, capture_output=True, timeout=120, check=False
    ).stdout.decode("utf-8", "replace")
    status = re.search(r"^X-Spam-Status: \w+, score=(-?[\d.]+)[^\n]*(?:\n\s+[^\n]*)*", out, re.MULTILINE)
    assert status, out[:2000]
    tests = re.search(r"tests=([^\n]*(?:\n\s+[^\n]*)*)", status.group(0))
    names = re.findall(r"[A-Z][A-Z0-9_]+", tests.group(1)) if tests else []
    return float(status.group(1)), names


@pytest.mark.skipif(SPAMASSASSIN is None, reason="Debian's spamassassin package is not installed")
def test_spamassassin_scores_each_class_under_two_without_image_only(one_of_each):
    for label, msg in one_of_each.items():
        score, rules = spamassassin_report(msg.raw)
        assert score < 2.0, (label, score, rules)
        assert not [r for r in rules if r.startswith("HTML_IMAGE_ONLY")], (label, rules)
