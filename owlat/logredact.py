"""A logging filter that blanks the installation's secrets in every log line: inbound secrets (`inb_…`) and API
keys (`lm_live_…`), wherever they appear (a request path such as the former `/inbound/raw/<secret>` that
`django.request` logs on a 4xx, an exception message, a repr). Installed on the console handler (settings)."""

from __future__ import annotations

import logging
import re

SECRET = re.compile(r"\b(inb_|lm_live_)[A-Za-z0-9_\-]{8,}")


def redact(text: str) -> str:
    return SECRET.sub(lambda m: f"{m.group(1)}[redacted]", text)


class RedactSecretsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the handler's to report, not ours
            return True
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
