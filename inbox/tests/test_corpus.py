"""Issue 10: ≥ 30 hostile messages are quarantined or reach no model unstripped (100 %); ≥ 30 ordinary messages
pass the scan (≥ 95 %). Runs the real pipeline with the real `openai` client against the loopback server."""

from __future__ import annotations

import pytest

from inbox.models import InboundMessage
from inbox.receive import ParsedMessage, message_receive, parse_raw
from inbox.tests.corpus import HOSTILE, ORDINARY, Item

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lift_start_limits(settings):
    settings.INBOX_START_RATE_PER_SENDER = 0
    settings.INBOX_START_RATE_GLOBAL = 0


def _store(org, item: Item, n: int) -> InboundMessage:
    if item.raw is not None:
        parsed = parse_raw(item.raw)
        parsed.message_id = f"<corpus-{item.name}-{n}@example.net>"
    else:
        parsed = ParsedMessage(
            message_id=f"<corpus-{item.name}-{n}@example.net>",
            from_email=f"sender{n}@example.net",
            from_name=item.from_name,
            to=["support@acme.test"],
            subject=item.subject,
            text_body=item.text,
            html_body=item.html,
            authentication={"dkim": "pass", "dmarc": "pass"},
        )
    return message_receive(organization_id=org.pk, parsed=parsed).message


def test_hostile_corpus_is_contained(ai_org, llm_server, run_pipeline):
    assert len(HOSTILE) >= 30
    contained, leaks = 0, []
    for n, item in enumerate(HOSTILE):
        llm_server.requests.clear()
        m = _store(ai_org, item, n)
        run_pipeline()
        m.refresh_from_db()
        seen = "\n".join(llm_server.prompts())
        if m.processing_status == "quarantined" or (item.payload not in seen):
            contained += 1
        else:
            leaks.append((item.name, m.processing_status))
    rate = contained / len(HOSTILE)
    print(f"\nhostile corpus: {contained}/{len(HOSTILE)} contained ({rate:.0%})")
    assert leaks == [] and rate == 1.0


def test_hostile_phishing_sets_the_flag_and_quarantines(ai_org, llm_server, run_pipeline):
    for n, item in enumerate(i for i in HOSTILE if i.name.startswith(("lookalike", "homoglyph"))):
        m = _store(ai_org, item, 100 + n)
        run_pipeline()
        m.refresh_from_db()
        assert m.processing_status == "quarantined", item.name
        assert m.security_flags["phishingDetected"] is True, item.name


def test_ordinary_corpus_passes(ai_org, llm_server, run_pipeline):
    assert len(ORDINARY) >= 30
    passed, blocked = 0, []
    for n, item in enumerate(ORDINARY):
        m = _store(ai_org, item, n)
        run_pipeline()
        m.refresh_from_db()
        if m.processing_status not in ("quarantined", "archived"):
            passed += 1
        else:
            blocked.append((item.name, m.processing_status, m.security_flags))
    rate = passed / len(ORDINARY)
    print(f"\nordinary corpus: {passed}/{len(ORDINARY)} passed ({rate:.0%}); blocked: {blocked}")
    assert rate >= 0.95, blocked
