"""Bounce and complaint intake over plain SMTP (DLV-12).

Modules: `parse` (what a received message says: RFC 3464 DSN, RFC 5965 ARF, a non-standard bounce through
flufl.bounce, or an auto-reply / challenge-response to ignore), `intake` (which send row it is about — the VERP
address it came to, checked by delivery.verp — and the send-lifecycle transition it applies), `server` (the aiosmtpd
SMTP/LMTP process, `manage.py run_bounce_server`).
"""
