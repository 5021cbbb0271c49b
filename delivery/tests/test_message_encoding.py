"""Text parts go out as 7bit (ASCII with lines that fit) or quoted-printable (anything else), never base64 —
base64 text is a spam signal (rspamd `MIME_BASE64_TEXT_BOGUS`); binary attachments stay base64. The written
path and the stdlib path (with attachments) decide alike, and the content decodes to exactly what was given."""

from __future__ import annotations

import email
import email.policy

import pytest

from delivery.messages import Attachment, OutgoingMessage


def _parts(raw: bytes) -> dict[str, tuple[str, str]]:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    return {
        p.get_content_type(): (
            p["Content-Transfer-Encoding"],
            p.get_content().replace("\r\n", "\n") if p.get_content_maintype() == "text" else "",
        )
        for p in msg.walk()
        if not p.is_multipart()
    }


@pytest.mark.parametrize("attachments", [[], [Attachment("a.bin", b"\x00\x01\xff", "application/pdf")]])
def test_ascii_is_7bit_and_anything_else_quoted_printable(attachments):
    html = "<p>Grüße, café = 5 €</p>" + "<span>x</span>" * 200  # one long non-ASCII line
    message = OutgoingMessage(
        from_email="a@acme.test",
        to="b@example.com",
        subject="S",
        message_id="<1@acme.test>",
        text="Hello Ada,\nplain ASCII text \nwith a trailing space",
        html=html,
        attachments=attachments,
    )
    raw = message.as_bytes()
    parts = _parts(raw)
    assert parts["text/plain"] == ("7bit", "Hello Ada,\nplain ASCII text \nwith a trailing space")
    assert parts["text/html"] == ("quoted-printable", html)
    if attachments:
        assert parts["application/pdf"][0] == "base64"
    assert max(len(line) for line in raw.split(b"\r\n")) <= 998
    assert b"\n" not in raw.replace(b"\r\n", b"")  # CRLF only


def test_a_long_ascii_line_is_quoted_printable_not_over_998():
    text = "word " * 400
    raw = OutgoingMessage(
        from_email="a@acme.test", to="b@example.com", subject="S", message_id="<1@acme.test>", text=text
    ).as_bytes()
    assert _parts(raw)["text/plain"] == ("quoted-printable", text)
    assert max(len(line) for line in raw.split(b"\r\n")) <= 998


def test_the_open_pixel_goes_only_into_bodies_with_enough_text(settings):
    from delivery.tracking import OPEN_PIXEL_MIN_TEXT, pixel_fits, visible_text_length

    settings.DELIVERY_OPEN_PIXEL_MIN_TEXT = OPEN_PIXEL_MIN_TEXT
    short = "<html><head><style>p{color:red}</style></head><body><p>Hello &amp; welcome</p></body></html>"
    assert visible_text_length(short) == len("Hello & welcome")
    assert not pixel_fits(short)  # a 1x1 image would make it look image-only
    assert pixel_fits("<p>" + "Plenty of words here. " * 200 + "</p>")
    settings.DELIVERY_OPEN_PIXEL_MIN_TEXT = 0
    assert pixel_fits(short)
