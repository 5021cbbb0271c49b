"""`Authentication-Results` (RFC 8601) of an inbound message, as the installation's own mail server wrote them.

Only header fields whose authserv-id is one of the setting `INBOX_AUTHSERV_ID` (comma-separated, compared
case-insensitively) are read: anyone can write an `Authentication-Results` field into a mail, so the results
count only when our MTA added them, and the MTA must remove incoming fields that claim its authserv-id (RFC 8601
section 5; e.g. OpenDMARC and OpenDKIM do, Postfix needs a `header_checks` rule). A message without such a field
is *untrusted*: it has no result, so it counts as unauthenticated (never auto-sent).

The header is parsed with the `authres` library (the RFC 8601 grammar: comments, quoted strings, properties),
never by substring, so a MAIL FROM such as `dmarc=pass@evil.example` stays the value of `smtp.mailfrom`.

`AuthenticationResults` is the result type: every method result in header order (the MTA's topmost field
first), each with its properties (`smtp.mailfrom`, `header.d`, `header.from`, …), and `summary()` for the three
results the message stores. Sender alignment (DMARC's relaxed or strict match of `header.d`/`smtp.mailfrom` to
the From domain) builds on `results_of(...)` and `MethodResult.prop(...)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from django.conf import settings

#: the result values the message stores (API-33's `authentication` enum); `hardfail` is RFC 4408's old `fail`
RESULTS = ("pass", "fail", "softfail", "neutral", "none", "temperror", "permerror")
ALIASES = {"hardfail": "fail"}
SUMMARY_METHODS = ("spf", "dkim", "dmarc")
#: a field longer than this is not ours (our MTA writes a few hundred characters); fields past MAX_FIELDS too
MAX_FIELD_CHARS = 8192
MAX_FIELDS = 50


@dataclass(frozen=True)
class MethodResult:
    """One `method=result` clause: `dkim=pass header.d=example.com header.s=sel1`."""

    method: str
    result: str
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    reason: str | None = None

    def prop(self, name: str) -> str | None:
        """The first value of property `name` (`ptype.property`, e.g. `header.d`), lower-cased key."""
        return self.properties.get(name.lower())


@dataclass(frozen=True)
class AuthenticationResults:
    """What the installation's MTA found: `trusted` is False when it added no field (then `results` is empty)."""

    trusted: bool
    authserv_id: str | None = None
    results: tuple[MethodResult, ...] = ()

    def results_of(self, method: str) -> tuple[MethodResult, ...]:
        return tuple(r for r in self.results if r.method == method)

    def result(self, method: str) -> str | None:
        """The stored result of `method`: DKIM passes when any signature passed, SPF and DMARC are the MTA's
        first (topmost) result; a value outside `RESULTS` counts as no result."""
        found = self.results_of(method)
        if not found:
            return None
        if method == "dkim" and any(r.result == "pass" for r in found):
            return "pass"
        value = ALIASES.get(found[0].result, found[0].result)
        return value if value in RESULTS else None

    def summary(self) -> dict[str, str | None]:
        """`{"spf", "dkim", "dmarc"}` → result or None (what `InboundMessage` stores)."""
        return {method: self.result(method) for method in SUMMARY_METHODS}


UNTRUSTED = AuthenticationResults(trusted=False)


def own_authserv_ids() -> frozenset[str]:
    value = getattr(settings, "INBOX_AUTHSERV_ID", ()) or ()
    if isinstance(value, str):
        value = value.split(",")
    return frozenset(v.strip().lower() for v in value if v and v.strip())


def parse_authentication_results(
    values: Iterable[str], *, authserv_ids: Iterable[str] | None = None
) -> AuthenticationResults:
    """The results of the `Authentication-Results` field values (in header order) whose authserv-id is ours.

    `authserv_ids` defaults to the setting `INBOX_AUTHSERV_ID`; none configured → UNTRUSTED. A field that does
    not parse is skipped (it cannot be ours)."""
    import authres
    import authres.dmarc

    ours = frozenset(i.lower() for i in authserv_ids) if authserv_ids is not None else own_authserv_ids()
    if not ours:
        return UNTRUSTED
    context = authres.FeatureContext(authres.dmarc)
    results: list[MethodResult] = []
    matched: str | None = None
    for index, raw in enumerate(values):
        if index >= MAX_FIELDS:
            break
        text = " ".join(str(raw or "").split())  # unfolded
        if not text or len(text) > MAX_FIELD_CHARS:
            continue
        try:
            header = context.parse_value(text)
        except Exception:  # authres raises its own SyntaxError family, and ValueError on an empty result
            continue
        if (header.authserv_id or "").lower() not in ours:
            continue
        matched = matched or header.authserv_id.lower()
        results.extend(_method_result(r) for r in header.results)
    if matched is None:
        return UNTRUSTED
    return AuthenticationResults(trusted=True, authserv_id=matched, results=tuple(results))


def _method_result(result: object) -> MethodResult:
    properties: dict[str, str] = {}
    for prop in getattr(result, "properties", None) or ():
        key = f"{prop.type}.{prop.name}".lower()
        if key not in properties and prop.value is not None:
            properties[key] = str(prop.value)
    reason = getattr(result, "reason", None)
    return MethodResult(
        method=str(result.method).lower(),
        result=str(result.result).lower(),
        properties=MappingProxyType(properties),
        reason=str(reason) if reason else None,
    )
