"""CMP-25 link reputation: the Google Safe Browsing lookup of the content scan against a local stand-in on
loopback, reached through the outbound guard only because the test lists it in `OUTBOUND_ALLOWED_HOSTS`.
A listed URL holds the campaign for review; a clean answer sends; a failed lookup never blocks."""

from __future__ import annotations

import pytest

from campaigns.models import ContentScanResult
from campaigns.scanner import Link, safe_browsing_flags
from delivery.models import EmailSend
from testsupport import Reply

from .test_orchestrator import send_and_drain

KEY = "sb-test-key"
LISTED = "https://example.org/post"  # the link in the conftest template


@pytest.fixture
def safe_browsing(settings, http_receiver):
    settings.GOOGLE_SAFE_BROWSING_API_KEY = KEY
    settings.GOOGLE_SAFE_BROWSING_URL = http_receiver.url + "/v4/threatMatches:find"
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{http_receiver.port}"]
    return http_receiver


def _listing(*entries: tuple[str, str]) -> Reply:
    return Reply(
        200,
        {
            "matches": [
                {"threatType": threat, "platformType": "ANY_PLATFORM", "threat": {"url": url}}
                for url, threat in entries
            ]
        },
    )


def test_a_listed_url_holds_the_campaign_for_review(make_campaign, org, make_contact, topic, safe_browsing):
    make_contact(topic=topic)
    safe_browsing.default = _listing((LISTED, "SOCIAL_ENGINEERING"))
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.status == "pending_review"
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()
    scan = ContentScanResult.objects.get(campaign=campaign)
    assert (scan.level, scan.score) == ("suspicious", 20)
    assert {"rule": "safe_browsing", "severity": "high", "description": f"Unsafe link: {LISTED}"} in [
        {k: f[k] for k in ("rule", "severity", "description")} for f in scan.flags
    ]
    # what went over the wire: one v4 lookup, the key in the header and never in the URL
    (req,) = safe_browsing.requests
    assert (req.method, req.path, req.query) == ("POST", "/v4/threatMatches:find", {})
    assert req.headers["x-goog-api-key"] == KEY
    info = req.json()["threatInfo"]
    assert info["threatEntries"] == [{"url": LISTED}]
    assert set(info["threatTypes"]) == {"MALWARE", "SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE"}


def test_a_clean_answer_sends(make_campaign, org, make_contact, topic, safe_browsing):
    make_contact(topic=topic)
    safe_browsing.default = Reply(200, {})
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert campaign.status == "sent"
    assert EmailSend.objects.filter(campaign_id=campaign.pk).count() == 1
    assert not ContentScanResult.objects.filter(campaign=campaign).exists()
    assert len(safe_browsing.requests) == 1


@pytest.mark.parametrize(
    "answer",
    [
        Reply(500, "backend error"),
        Reply(200, "not json"),
        Reply(403, {"error": {"code": 403}}),
        Reply(200, {"matches": "x"}),
    ],
    ids=["server error", "unreadable", "key refused", "wrong shape"],
)
def test_a_failed_lookup_never_blocks(make_campaign, org, make_contact, topic, safe_browsing, answer):
    make_contact(topic=topic)
    safe_browsing.default = answer
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert len(safe_browsing.requests) == 1
    assert campaign.status == "sent"
    assert EmailSend.objects.filter(campaign_id=campaign.pk).count() == 1


def test_a_lookup_the_outbound_guard_refuses_never_blocks(
    make_campaign, org, make_contact, topic, safe_browsing, settings
):
    """Without the allow-list entry the loopback stand-in is refused before a byte is sent; the send goes on."""
    settings.OUTBOUND_ALLOWED_HOSTS = []
    make_contact(topic=topic)
    safe_browsing.default = _listing((LISTED, "MALWARE"))
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert safe_browsing.requests == []
    assert campaign.status == "sent"


def test_an_unreachable_lookup_never_blocks(settings):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.GOOGLE_SAFE_BROWSING_API_KEY = KEY
    settings.GOOGLE_SAFE_BROWSING_URL = f"http://127.0.0.1:{port}/v4/threatMatches:find"
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{port}"]
    assert safe_browsing_flags([Link(LISTED, "Read")]) == []


def test_severity_per_threat_type_and_the_combined_score(safe_browsing):
    from campaigns.scanner import scan_content

    safe_browsing.default = _listing(
        ("https://a.example/", "MALWARE"),
        ("https://b.example/", "UNWANTED_SOFTWARE"),
        ("https://c.example/", "X"),
    )
    links = [
        Link(u, "x") for u in ("https://a.example/", "https://b.example/", "https://c.example/", "mailto:a@b")
    ]
    flags = safe_browsing_flags(links)
    assert [(f.severity, f.description) for f in flags] == [
        ("high", "Unsafe link: https://a.example/"),
        ("medium", "Unsafe link: https://b.example/"),
        ("low", "Unsafe link: https://c.example/"),
    ]
    assert [e["url"] for e in safe_browsing.requests[0].json()["threatInfo"]["threatEntries"]] == [
        "https://a.example/",
        "https://b.example/",
        "https://c.example/",
    ]  # only http(s) links are looked up
    result = scan_content("Hello", "<p>Hello</p>", url_flags=flags)
    assert (result.score, result.level) == (33, "suspicious")  # 20 + 10 + 3


def test_no_key_no_lookup(make_campaign, org, make_contact, topic, safe_browsing, settings):
    settings.GOOGLE_SAFE_BROWSING_API_KEY = ""
    make_contact(topic=topic)
    campaign = make_campaign()
    send_and_drain(campaign, org)
    assert safe_browsing.requests == [] and campaign.status == "sent"
