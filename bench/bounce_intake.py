"""Bounce intake reading (issue: bounce and complaint intake): the corpus in tests/bounce_corpus read by
`delivery.bounces.parse.bounce_classify`, against flufl.bounce alone on the same mails as the baseline.

    .venv/bin/python bench/bounce_intake.py                 # every corpus mail, 20 rounds
    .venv/bin/python bench/bounce_intake.py --rounds 1      # a smoke run

No database: classification is pure. Figures (printed and written to var/bench/bounce_intake.json):
- CPU per mail (process time, p50 / p95 over all rounds) — target p95 < 2 ms;
- failures recognised: of the mails the manifest calls a failed delivery (hard, soft, block), the share read as
  one of those kinds — target ≥ 97 %;
- address-is-fine failures marked hard: of the failures whose reason is not address-dead (soft and block),
  the share read as `hard` — target ≤ 10 %;
- non-bounces read as bounces: complaints, auto-replies, delay warnings and positive DSNs read as hard, soft or
  block — target 0;
- kind and reason exactly as the manifest says (information).
The baseline line is flufl.bounce's `all_failures` on the same mails: its CPU per mail and how many failures it
finds a recipient for (it has no notion of reasons; its "permanent" would be hard).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
CORPUS = BASE_DIR / "tests" / "bounce_corpus"
OUT = BASE_DIR / "var" / "bench" / "bounce_intake.json"
FAILURES = ("hard", "soft", "block")
TARGETS = {"p95_ms": 2.0, "recognised_pct": 97.0, "wrong_hard_pct": 10.0, "false_bounces": 0}


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


def run(rounds: int) -> dict:
    sys.path.insert(0, str(BASE_DIR))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "owlat.settings")
    from email import message_from_bytes, policy

    from flufl.bounce import all_failures

    from delivery.bounces.parse import bounce_classify

    manifest = json.loads((CORPUS / "manifest.json").read_text())
    mails = [(entry, (CORPUS / "mails" / entry["file"]).read_bytes()) for entry in manifest]
    ours: list[float] = []
    theirs: list[float] = []
    reports = {}
    flufl_found = {}
    for _ in range(rounds):
        for entry, raw in mails:
            start = time.process_time()
            reports[entry["file"]] = bounce_classify(raw)
            ours.append(time.process_time() - start)
            start = time.process_time()
            try:
                temporary, permanent = all_failures(message_from_bytes(raw, policy=policy.compat32))
            except Exception:
                temporary, permanent = set(), set()
            theirs.append(time.process_time() - start)
            flufl_found[entry["file"]] = (bool(temporary), bool(permanent))
    failures = [e for e, _ in mails if e["kind"] in FAILURES]
    fine = [e for e in failures if e["kind"] != "hard"]
    others = [e for e, _ in mails if e["kind"] not in FAILURES]
    recognised = sum(reports[e["file"]].kind in FAILURES for e in failures)
    wrong_hard = sum(reports[e["file"]].kind == "hard" for e in fine)
    false_bounces = sum(reports[e["file"]].kind in FAILURES for e in others)
    exact = sum(
        (reports[e["file"]].kind, reports[e["file"]].reason) == (e["kind"], e["reason"]) for e, _ in mails
    )
    flufl_recognised = sum(any(flufl_found[e["file"]]) for e in failures)
    flufl_wrong_hard = sum(flufl_found[e["file"]][1] for e in fine)
    flufl_false = sum(any(flufl_found[e["file"]]) for e in others)
    p95 = _quantile(ours, 0.95) * 1000
    result = {
        "mails": len(mails),
        "families": len({e["family"] for e, _ in mails}),
        "rounds": rounds,
        "cpu_ms_p50": round(statistics.median(ours) * 1000, 3),
        "cpu_ms_p95": round(p95, 3),
        "recognised_pct": _pct(recognised, len(failures)),
        "wrong_hard_pct": _pct(wrong_hard, len(fine)),
        "false_bounces": false_bounces,
        "exact_pct": _pct(exact, len(mails)),
        "baseline_flufl": {
            "cpu_ms_p50": round(statistics.median(theirs) * 1000, 3),
            "cpu_ms_p95": round(_quantile(theirs, 0.95) * 1000, 3),
            "recognised_pct": _pct(flufl_recognised, len(failures)),
            "wrong_hard_pct": _pct(flufl_wrong_hard, len(fine)),
            "false_bounces": flufl_false,
        },
        "load_average": os.getloadavg()[0],
    }
    result["figures"] = [
        _figure(
            "CPU per mail p95 (ms)",
            result["cpu_ms_p95"],
            result["baseline_flufl"]["cpu_ms_p95"],
            "< 2",
            p95 < 2,
        ),
        _figure(
            "failures recognised (%)",
            result["recognised_pct"],
            result["baseline_flufl"]["recognised_pct"],
            ">= 97",
            result["recognised_pct"] >= TARGETS["recognised_pct"],
        ),
        _figure(
            "address-is-fine failures marked hard (%)",
            result["wrong_hard_pct"],
            result["baseline_flufl"]["wrong_hard_pct"],
            "<= 10",
            result["wrong_hard_pct"] <= TARGETS["wrong_hard_pct"],
        ),
        _figure("non-bounces read as bounces", false_bounces, flufl_false, "0", false_bounces == 0),
    ]
    return result


def _figure(name: str, value: float, baseline: float, target: str, met: bool) -> dict:
    return {"figure": name, "value": value, "baseline": baseline, "target": target, "met": met}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="times each corpus mail is read (default 20)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    result = run(args.rounds)
    print(f"{result['mails']} mails, {result['families']} families, {result['rounds']} rounds")
    for row in result["figures"]:
        verdict = "met" if row["met"] else "MISSED"
        print(
            f"{row['figure']:45} {row['value']:>8}   flufl.bounce alone {row['baseline']:>8}   {row['target']:>6}  {verdict}"
        )
    print(
        f"kind and reason as the manifest says: {result['exact_pct']} %   load average {result['load_average']:.2f}"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
