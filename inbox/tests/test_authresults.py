"""Authentication-Results (RFC 8601, inbox/authresults.py): parsed with a real grammar, read only from the
installation's own authserv-id, untrusted when the MTA added none."""

from __future__ import annotations

import pytest

from inbox.authresults import MAX_FIELD_CHARS, UNTRUSTED, parse_authentication_results
from inbox.receive import parse_raw

OURS = ["mx.owlat.test"]


def parse(*values, ours=OURS):
    return parse_authentication_results(values, authserv_ids=ours)


def test_a_mail_from_that_looks_like_a_result_stays_a_property_value():
    # the report's trick: MAIL FROM "dmarc=pass@evil.example" made a substring search read dmarc=pass
    results = parse(
        "mx.owlat.test; spf=pass smtp.mailfrom=dmarc=pass@evil.example; dkim=none; "
        "dmarc=fail (p=reject) header.from=victim.example"
    )
    assert results.trusted
    assert results.summary() == {"spf": "pass", "dkim": "none", "dmarc": "fail"}
    (spf,) = results.results_of("spf")
    assert spf.prop("smtp.mailfrom") == "dmarc=pass@evil.example"
    assert results.results_of("dmarc")[0].prop("header.from") == "victim.example"


def test_only_the_installations_authserv_id_is_read():
    forged = "attacker.example; spf=pass smtp.mailfrom=victim.example; dkim=pass header.d=victim.example; dmarc=pass"
    assert parse(forged) == UNTRUSTED
    assert parse(forged).summary() == {"spf": None, "dkim": None, "dmarc": None}
    # ours, below a forged one: only ours counts
    results = parse(forged, "MX.Owlat.Test; dmarc=fail header.from=victim.example")
    assert results.trusted and results.authserv_id == "mx.owlat.test"
    assert results.summary() == {"spf": None, "dkim": None, "dmarc": "fail"}


def test_untrusted_when_the_mta_added_none_or_no_authserv_id_is_configured(settings):
    assert parse() == UNTRUSTED
    settings.INBOX_AUTHSERV_ID = []
    assert parse_authentication_results(["mx.owlat.test; dmarc=pass"]) == UNTRUSTED
    settings.INBOX_AUTHSERV_ID = ["mx.owlat.test", "mx2.owlat.test"]
    assert parse_authentication_results(["mx2.owlat.test; dmarc=pass"]).summary()["dmarc"] == "pass"


def test_the_mtas_topmost_result_wins_and_its_fields_are_merged():
    # OpenDKIM and OpenDMARC each add a field with the same authserv-id; a forged field below claims ours too
    results = parse(
        "mx.owlat.test; dmarc=fail header.from=victim.example",
        "mx.owlat.test 1; dkim=fail (bad signature) header.d=victim.example; spf=softfail smtp.mailfrom=x.example",
        "mx.owlat.test; dmarc=pass; spf=pass",
    )
    assert results.summary() == {"spf": "softfail", "dkim": "fail", "dmarc": "fail"}


def test_comments_quoted_strings_and_several_signatures():
    results = parse(
        'mx.owlat.test (postfix (v3)); dkim=fail reason="bad sig" header.d=other.example; '
        'dkim = pass (good) header . d = example.com header.s=s1; spf=hardfail smtp.mailfrom="a b"@example.com'
    )
    assert results.summary() == {"spf": "fail", "dkim": "pass", "dmarc": None}
    assert [r.prop("header.d") for r in results.results_of("dkim")] == ["other.example", "example.com"]
    assert results.results_of("dkim")[0].reason == "bad sig"


@pytest.mark.parametrize(
    "value",
    [
        "mx.owlat.test",  # no resinfo
        "mx.owlat.test; dmarc",  # no result
        "dmarc=pass; mx.owlat.test",
        "mx.owlat.test; dmarc=pass (unterminated comment",
        "mx.owlat.test; dmarc=pass " + "x" * MAX_FIELD_CHARS,
    ],
)
def test_a_field_that_does_not_parse_is_not_trusted(value):
    assert parse(value) == UNTRUSTED


def test_results_outside_the_stored_values_count_as_none():
    assert parse("mx.owlat.test; dmarc=bestguesspass; dkim=policy").summary() == {
        "spf": None,
        "dkim": None,
        "dmarc": None,
    }


def test_parse_raw_reads_only_our_fields(settings):
    settings.INBOX_AUTHSERV_ID = ["mx.owlat.test"]
    raw = (
        b"Authentication-Results: mx.owlat.test; spf=pass smtp.mailfrom=dmarc=pass@evil.example;\r\n"
        b"  dmarc=fail header.from=victim.example\r\n"
        b"Authentication-Results: evil.example; dkim=pass header.d=victim.example\r\n"
        b"From: ceo@victim.example\r\nTo: support@acme.test\r\nMessage-ID: <a1@evil.example>\r\n"
        b"Subject: hi\r\n\r\nbody\r\n"
    )
    parsed = parse_raw(raw)
    assert parsed.authentication == {"spf": "pass", "dkim": None, "dmarc": "fail"}
    assert parsed.auth_results.trusted
    settings.INBOX_AUTHSERV_ID = []
    assert parse_raw(raw).authentication == {"spf": None, "dkim": None, "dmarc": None}
