"""Sending-domain verification and DKIM (DOM-12, DOM-20).

- `records`: what the operator must publish (ownership TXT, SPF, DKIM per selector, DMARC, return-path CNAME);
- `resolver`: the one DNS resolver every query goes through (`DNS_NAMESERVERS` points it at a stand-in);
- `checks`: what DNS says about each record (`ok | missing | wrong | error`);
- `lifecycle`: the single writer of `Domain.status` (`registering → pending → verified | failed`);
- `keys`: DKIM keys (RSA 2048), encrypted at rest with a key derived from `SECRET_KEY`, rotation with overlap;
- `verification`: register, check now, the cron re-check, the staff override, the 24 h stale warning;
- `signing`: DKIM signatures for the SMTP provider path.
"""
