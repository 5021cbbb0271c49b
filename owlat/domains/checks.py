"""What DNS says about each record a sending domain must publish (`records.expected_records`).

Each record gets a state: `ok` (published as required), `missing` (no such record), `wrong` (a record is there
but does not do the job — e.g. another token, a second SPF record, an SPF record without this installation, an
old DKIM key), `error` (DNS did not answer: nothing can be concluded). The verdict over all records drives the
verification lifecycle (`verification.domain_check`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dns.resolver

from owlat.domains import records as rec
from owlat.domains.resolver import ABSENT, ERROR, Lookup, lookup

OK, MISSING, WRONG = "ok", "missing", "wrong"


def _result(state: str, found: list[str] | tuple[str, ...], detail: str) -> dict[str, Any]:
    return {"state": state, "found": list(found), "detail": detail}


def _unanswered(result: Lookup, what: str) -> dict[str, Any] | None:
    if result.status == ERROR:
        return _result(ERROR, [], result.detail)
    if result.status == ABSENT:
        return _result(MISSING, [], f"No {what} published ({result.detail}).")
    return None


def tags(value: str) -> dict[str, str]:
    """`k=v; k=v` tag lists (DKIM, DMARC), keys lower-cased, whitespace removed from values."""
    out: dict[str, str] = {}
    for part in value.split(";"):
        key, sep, val = part.partition("=")
        if sep:
            out[key.strip().lower()] = "".join(val.split())
    return out


def check_ownership(record: dict[str, str], result: Lookup) -> dict[str, Any]:
    bad = _unanswered(result, "ownership TXT record")
    if bad:
        return bad
    if record["value"] in [v.strip() for v in result.values]:
        return _result(OK, result.values, "Ownership confirmed.")
    return _result(WRONG, result.values, f"The TXT record must be exactly {record['value']}.")


def check_spf(record: dict[str, str], result: Lookup) -> dict[str, Any]:
    bad = _unanswered(result, "TXT record")
    if bad:
        return bad
    spf = [v for v in result.values if v.strip().lower().split(" ")[0] == "v=spf1"]
    if not spf:
        return _result(MISSING, result.values, "No SPF record (v=spf1 …) published.")
    if len(spf) > 1:
        return _result(WRONG, spf, "More than one SPF record: receivers treat that as an error; merge them.")
    mechanism = rec.spf_mechanism().lower()
    terms = [t.lower().lstrip("+") for t in spf[0].split()]
    if mechanism in terms:
        return _result(OK, spf, "This installation is authorized.")
    return _result(WRONG, spf, f"The SPF record does not contain {rec.spf_mechanism()}; add it.")


def check_dkim(record: dict[str, str], result: Lookup) -> dict[str, Any]:
    bad = _unanswered(result, "DKIM key")
    if bad:
        return bad
    want = tags(record["value"]).get("p", "")
    published = [tags(v).get("p") for v in result.values if "p" in tags(v)]
    if want and want in published:
        return _result(OK, result.values, "The public key matches.")
    if not published:
        return _result(WRONG, result.values, "The record has no DKIM key (p=).")
    return _result(
        WRONG, result.values, "A different key is published under this selector; publish the key shown."
    )


def check_dmarc(record: dict[str, str], result: Lookup) -> dict[str, Any]:
    bad = _unanswered(result, "DMARC record")
    if bad:
        return bad
    dmarc = [v for v in result.values if v.strip().upper().startswith("V=DMARC1")]
    if not dmarc:
        return _result(MISSING, result.values, "No DMARC record (v=DMARC1; …) published.")
    if len(dmarc) > 1:
        return _result(WRONG, dmarc, "More than one DMARC record; keep one.")
    if tags(dmarc[0]).get("p", "").lower() not in ("none", "quarantine", "reject"):
        return _result(WRONG, dmarc, "The DMARC record needs a policy: p=none, p=quarantine or p=reject.")
    return _result(OK, dmarc, "DMARC policy published.")


def check_return_path(record: dict[str, str], result: Lookup) -> dict[str, Any]:
    rdtype = record.get("type", "CNAME")
    bad = _unanswered(result, f"{rdtype} record")
    if bad:
        return bad
    want = record["value"].rstrip(".").lower()
    if any(v.rstrip(".").lower() == want for v in result.values):
        return _result(OK, result.values, "Bounces reach this installation.")
    if rdtype == "CNAME":
        return _result(WRONG, result.values, f"The CNAME record must point to {want}.")
    return _result(WRONG, result.values, f"The {rdtype} record must be {want}.")


CHECKS: dict[str, Callable[[dict[str, str], Lookup], dict[str, Any]]] = {
    "ownership": check_ownership,
    "spf": check_spf,
    "dkim": check_dkim,
    "dmarc": check_dmarc,
    "return_path": check_return_path,
}


def check_records(
    records: list[dict[str, str]], resolver: dns.resolver.Resolver | None = None
) -> dict[str, dict[str, Any]]:
    """Query DNS for every record; `{record key: {state, found, detail}}`."""
    return {r["key"]: CHECKS[r["kind"]](r, lookup(r["name"], r["type"], resolver)) for r in records}


def verdict(records: list[dict[str, str]], results: dict[str, dict[str, Any]]) -> str:
    """`ok` when every required record is ok; `bad` when one is missing or wrong; `unknown` when DNS errors
    leave it open. DKIM: required is one live key whose record is ok (during a rotation the new selector may
    still be unpublished while the old one signs)."""
    states: list[str] = []
    dkim_states = []
    for r in records:
        state = results.get(r["key"], {}).get("state", ERROR)
        (dkim_states if r["kind"] == "dkim" else states).append(state)
    if dkim_states:
        if OK in dkim_states:
            states.append(OK)
        elif ERROR in dkim_states:
            states.append(ERROR)
        else:
            states.append(MISSING)
    else:
        states.append(MISSING)
    if all(s == OK for s in states):
        return "ok"
    if any(s in (MISSING, WRONG) for s in states):
        return "bad"
    return "unknown"
