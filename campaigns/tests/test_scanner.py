"""CMP-26 scanner rules and CMP-25 levels."""

from __future__ import annotations

from campaigns.scanner import content_fingerprint, level_for, scan_content


def rules(result):
    return sorted({f.rule for f in result.flags})


def test_clean_newsletter():
    r = scan_content("Our March news", '<p>Hello</p><a href="https://example.org/post">Read</a>')
    assert (r.score, r.level, r.flags) == (0, "clean", [])


def test_spec_example_free_money_and_viagra_is_blocked():
    r = scan_content("Free money inside", "<p>Cheap viagra</p>")
    assert r.score == 40 and r.level == "blocked"


def test_levels():
    assert (level_for(14), level_for(15), level_for(39), level_for(40)) == (
        "clean",
        "suspicious",
        "suspicious",
        "blocked",
    )


def test_phishing_rules():
    html = (
        '<a href="javascript:alert(1)">x</a>'
        '<a href="https://paypa1.com/login">login</a>'
        '<a href="https://deals.xyz/">deals</a>'
        '<a href="https://evil.example/">www.mybank.com</a>'
    )
    r = scan_content("Hi", html)
    descriptions = " | ".join(f.description for f in r.flags)
    assert "Script or data link" in descriptions
    assert "Look-alike of paypal" in descriptions
    assert "Suspicious top-level domain" in descriptions
    assert "Link text shows mybank.com" in descriptions
    assert all(f.severity == "high" for f in r.flags)
    assert r.score == 80


def test_shorteners_homoglyphs_subject_rules_and_prohibited():
    r = scan_content(
        "BUY THIS NOW!!!", '<a href="https://bit.ly/abc">go</a><a href="https://xn--pple-43d.com">apple</a>'
    )
    assert rules(r) == ["homoglyphs", "subject_caps", "subject_punctuation", "url_shorteners"]
    r = scan_content("Hello", "<p>Please send your social security number and verify your account now</p>")
    assert [f.rule for f in r.flags] == ["prohibited_content", "prohibited_content"]


def test_weak_keywords_add_up_to_one_medium_flag():
    r = scan_content(
        "Special promotion",
        "<p>Click here, buy now, order now, 100% free, limited time offer, expires today</p>",
    )
    medium = [f for f in r.flags if f.severity == "medium"]
    assert len(medium) == 1 and medium[0].description.startswith("Several spam phrases")


def test_a_crashing_rule_adds_a_low_flag():
    def broken(subject, text, links):
        raise RuntimeError("boom")

    r = scan_content("Hi", "<p>x</p>", rules=(broken,))
    assert [(f.rule, f.severity) for f in r.flags] == [("suspicious_pattern", "low")] and r.score == 3


def test_url_flags_add_to_the_score_capped_at_100():
    from campaigns.scanner import Flag

    r = scan_content("Hi", "<p>x</p>", url_flags=[Flag("safe_browsing", "high", "u")] * 6)
    assert r.score == 100


def test_fingerprint_depends_on_subject_and_html():
    assert content_fingerprint("a", "b") == content_fingerprint("a", "b")
    assert content_fingerprint("a", "b") != content_fingerprint("a ", "b")


def test_each_flag_keeps_the_offending_text_with_its_context():
    long_intro = "Dear reader, this is a long opening sentence about our spring garden news. "
    r = scan_content(
        "SUMMER SALE NOW!!!",
        f"<p>{long_intro}Get FREE MONEY today and more.</p>"
        '<p>Please send an urgent wire transfer to us.</p><a href="https://bit.ly/x">our offer</a>',
    )
    by_rule = {f.rule: f.as_dict() for f in r.flags}
    spam = by_rule["spam_keywords"]
    assert spam["match"] == "FREE MONEY" and spam["excerpt"].startswith("…")
    assert "Get FREE MONEY today" in spam["excerpt"] and len(spam["excerpt"]) < 100
    assert by_rule["prohibited_content"]["match"] == "urgent wire transfer"
    assert by_rule["url_shorteners"] == {
        "rule": "url_shorteners",
        "severity": "medium",
        "description": "URL shortener: bit.ly",
        "excerpt": "our offer → https://bit.ly/x",
        "match": "https://bit.ly/x",
    }
    assert by_rule["subject_caps"]["match"] == "SUMMER SALE NOW!!!"
    assert by_rule["subject_punctuation"]["excerpt"] == "SUMMER SALE NOW!!!"
