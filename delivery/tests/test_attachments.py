"""Attachments given by URL are fetched safely (API-22): https only, public addresses only, size limits."""

from __future__ import annotations

import pytest

from delivery.attachments import AttachmentError, check_url, fetch_url, load_attachments
from delivery.models import SendAttachment


def public(host, port):
    return ["93.184.216.34"]


@pytest.mark.parametrize(
    "url",
    [
        "http://example.org/a.pdf",
        "ftp://example.org/a.pdf",
        "https://user:pw@example.org/a.pdf",
    ],
)
def test_only_plain_https_urls(url):
    with pytest.raises(AttachmentError):
        check_url(url, resolver=public)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "0.0.0.0",
    ],
)
def test_private_and_local_addresses_are_refused(address):
    with pytest.raises(AttachmentError, match="not a public address"):
        check_url("https://files.example.org/a.pdf", resolver=lambda h, p: [address])


def test_a_name_resolving_to_any_private_address_is_refused():
    with pytest.raises(AttachmentError):
        check_url("https://mixed.example.org/a", resolver=lambda h, p: ["93.184.216.34", "10.0.0.1"])


def test_public_https_url_is_accepted():
    check_url("https://files.example.org:8443/a.pdf", resolver=public)


def test_fetching_a_loopback_url_never_connects():
    with pytest.raises(AttachmentError, match="not allowed"):
        fetch_url("https://127.0.0.1:1/secret")


def test_fetch_is_guarded_at_connect_time_by_the_shared_guard(monkeypatch):
    # a name that resolves to loopback when the worker connects (DNS rebinding) is refused by owlat.outbound
    from owlat import outbound

    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.1"])
    with pytest.raises(AttachmentError, match="not a public address"):
        fetch_url("https://files.example.org/a.pdf")


def test_fetch_refuses_plain_http(http_receiver):
    with pytest.raises(AttachmentError, match="https"):
        fetch_url(http_receiver.url + "/a.pdf")
    assert http_receiver.requests == []


def test_api_refuses_a_local_attachment_url_naming_the_field():
    from rest_framework.exceptions import ValidationError

    from delivery.api.serializers import AttachmentsField
    from owlat.api.errors import exception_handler

    field = AttachmentsField()
    field.bind("attachments", None)
    with pytest.raises(ValidationError) as info:
        field.run_validation([{"filename": "a.pdf", "url": "https://169.254.169.254/latest"}])
    error = exception_handler(ValidationError({"attachments": info.value.detail})).data["error"]
    assert error["data"]["field"] == "attachments[0].url"
    assert "is not allowed: 169.254.169.254 is not a public address" in error["message"]


@pytest.mark.django_db
def test_load_attachments_enforces_the_total_size(make_tx_send, org):
    send = make_tx_send()
    SendAttachment.objects.create(
        organization=org, send=send, position=0, filename="a.txt", content=b"hello", content_type="text/plain"
    )
    SendAttachment.objects.create(
        organization=org, send=send, position=1, filename="b.bin", url="https://files.example.org/b"
    )
    calls = []

    def fetch(url, *, max_bytes):
        calls.append((url, max_bytes))
        return b"x" * 10, "application/pdf"

    files = load_attachments(send, fetch=fetch)
    assert [(f.filename, f.content, f.content_type) for f in files] == [
        ("a.txt", b"hello", "text/plain"),
        ("b.bin", b"x" * 10, "application/pdf"),
    ]
    assert calls == [("https://files.example.org/b", 10 * 1024 * 1024 - 5)]

    def too_big(url, *, max_bytes):
        raise AttachmentError("Total attachment size exceeds 10MB limit")

    with pytest.raises(AttachmentError):
        load_attachments(send, fetch=too_big)


@pytest.mark.django_db
def test_attachments_travel_with_the_message_and_are_deleted_after(make_tx_send, org, smtp_sink, settings):
    from delivery.worker import dispatch_batch

    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    send = make_tx_send()
    SendAttachment.objects.create(
        organization=org, send=send, filename="hello.txt", content=b"hello world", content_type="text/plain"
    )
    assert dispatch_batch("transactional", [str(send.pk)]).sent == 1
    [msg] = smtp_sink.wait_for(1)
    [part] = list(msg.iter_attachments())
    assert part.get_filename() == "hello.txt" and part.get_content() == "hello world"
    assert not SendAttachment.objects.filter(send=send).exists()
