#!/usr/bin/env python
"""`make bench`: every benchmark in `bench/`, one after the other, and one table of their figures (issue 12 item 7).

Each script runs alone in its own process with the sizes of the chosen profile and writes its own JSON under
`var/bench/` (as it does when run by hand). This runner reads that JSON back and turns it into rows — figure,
value, the baseline measured in the same run, ratio, target, met/MISSED, the load average when the script ended —
prints them as one table and writes them to `var/bench.json`.

A script's JSON may carry a `figures` (or `table`) list of rows with the keys of `Figure` (figure, value, baseline,
target, met; unit and ratio optional); the runner takes those as they are.
Otherwise the script's adapter below (in `BENCHES`) reads its existing keys.

Profiles: `reduced` (default, `make bench`, about 10 minutes in all on a 2-core machine), `full` (`make bench
FULL=1`, the issues' target sizes, an hour or more) and `tiny` (a smoke run of the runner itself, 2–3 minutes).
`--only a,b` runs some scripts. Run it on an otherwise idle machine; the load average column says how idle it was.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
OUT_DIR = BASE_DIR / "var" / "bench"
sys.path.insert(0, str(BASE_DIR / "bench"))

from common import server_line, server_settings  # noqa: E402


@dataclass
class Figure:
    script: str
    figure: str
    value: float | None
    unit: str = ""
    baseline: float | None = None
    ratio: float | None = None
    target: str = ""
    met: bool | None = None  # None: no target, or the figure could not be measured
    load_average: float | None = None


@dataclass
class Bench:
    name: str
    # the script's adapter; None where the script writes its own `figures`/`table` rows
    figures: Callable[[dict[str, Any]], list[Figure]] | None
    # the script's arguments per profile; `full` runs it with `full` (default: the script's own defaults)
    tiny: list[str]
    reduced: list[str]
    full: list[str] = field(default_factory=list)
    json_name: str = ""
    timeout: dict[str, float] = field(default_factory=lambda: {"tiny": 300, "reduced": 240, "full": 7200})

    def args(self, profile: str) -> list[str]:
        return {"tiny": self.tiny, "reduced": self.reduced, "full": self.full}[profile]

    @property
    def json_path(self) -> Path:
        return OUT_DIR / (self.json_name or f"{self.name}.json")


def _ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return value / baseline


# --- adapters: a script's JSON → figures -------------------------------------------------------------------


def delivery_figures(d: dict[str, Any]) -> list[Figure]:
    rate, base = d.get("system_messages_per_second"), d.get("baseline_messages_per_second")
    ratio = _ratio(rate, base)
    return [
        Figure(
            "delivery_throughput",
            "campaign pool delivery, pacing off",
            rate,
            "msgs/s",
            base,
            ratio,
            "≥ 1.0 × smtplib one connection (issue 12)",
            None if ratio is None else ratio >= 1.0,
        ),
        Figure(
            "delivery_throughput",
            "extra deliveries beyond one per row",
            d.get("duplicates"),
            "msgs",
            target="0",
            met=None if d.get("duplicates") is None else d["duplicates"] == 0,
        ),
    ]


def pacing_figures(d: dict[str, Any]) -> list[Figure]:
    ok = d.get("targets_met", {})
    offered = d.get("offered_rate")
    return [
        Figure("pool_pacing", "campaign pool rate", d.get("campaign_rate"), "msgs/s", 20.0,
               _ratio(d.get("campaign_rate"), 20.0), "20/s ± 5 %", ok.get("campaign")),
        Figure("pool_pacing", "transactional pool rate", d.get("transactional_rate"), "msgs/s", offered,
               _ratio(d.get("transactional_rate"), offered), f"{offered}/s ± 5 %", ok.get("transactional")),
        Figure("pool_pacing", "transactional p95 API call → SMTP acceptance (campaign load)",
               None if d.get("p95") is None else d["p95"] * 1000, "ms", target="< 250 ms (issue 12)",
               met=None if d.get("p95") is None else d["p95"] < 0.25 and not d.get("not_arrived")),
    ]  # fmt: skip


def fairness_figures(d: dict[str, Any]) -> list[Figure]:
    return [
        Figure("pool_fairness", f"small campaign during a {d.get('large_rows', 0):,}-row send of another org",
               d.get("contended_seconds"), "s", d.get("alone_seconds"), d.get("ratio"), "≤ 2 × alone",
               d.get("met")),
    ]  # fmt: skip


def fanout_figures(d: dict[str, Any]) -> list[Figure]:
    rows = d.get("results") or []
    out = [
        Figure("campaign_fanout", f"send rows materialized, {r.get('size', 0):,} contacts",
               r.get("system_rows_per_second"), "rows/s", r.get("copy_rows_per_second"), r.get("ratio"),
               "≥ 0.3 × COPY", None if r.get("ratio") is None else r["ratio"] >= 0.3)
        for r in rows
    ]  # fmt: skip
    if len(rows) >= 2 and rows[0].get("peak_rss_mb"):
        growth = rows[-1]["peak_rss_mb"] / rows[0]["peak_rss_mb"]
        out.append(
            Figure("campaign_fanout", "peak RSS of the walking cluster, largest ÷ smallest size",
                   rows[-1]["peak_rss_mb"], "MB", rows[0]["peak_rss_mb"], growth, "≤ 1.2×", growth <= 1.2)
        )  # fmt: skip
    return out


def admin_figures(d: dict[str, Any]) -> list[Figure]:
    return [
        Figure("admin_pages", f"admin page {r.get('page')} ({r.get('queries')} queries)",
               None if r.get("median_s") is None else r["median_s"] * 1000, "ms", target="< 1000 ms, 200",
               met=r.get("ok"))
        for r in d.get("results") or []
    ]  # fmt: skip


def api_figures(d: dict[str, Any]) -> list[Figure]:
    medians = d.get("median_rps") or {}
    after, before = medians.get("after", {}), medians.get("before", {})
    out = []
    for endpoint in ("contacts", "events"):
        value, base = after.get(endpoint), before.get(endpoint)
        ratio = _ratio(value, base)
        out.append(
            Figure("api_latency", f"POST /api/v1/{endpoint} under gunicorn", value, "req/s", base, ratio,
                   "≥ 0.9 × before (issue 7; needs --before)" if base else "",
                   None if ratio is None else ratio >= 0.9)
        )  # fmt: skip
    return out


def inbox_figures(d: dict[str, Any]) -> list[Figure]:
    seconds, messages = d.get("seconds"), d.get("messages")
    rate = d.get("messagesPerSecond") or (messages / seconds if seconds and messages else None)
    p95 = d.get("overheadP95Ms")
    return [
        Figure("inbox_pipeline", "inbox agent pipeline end to end", rate, "msgs/s", target="≥ 20/s",
               met=None if rate is None else rate >= 20),
        Figure("inbox_pipeline", "step overhead p95", p95, "ms", target="< 50 ms",
               met=None if p95 is None else p95 < 50),
    ]  # fmt: skip


BENCHES = [
    Bench(
        "delivery_throughput",
        delivery_figures,
        tiny=["--rows", "300", "--warmup", "30"],
        reduced=["--rows", "3000", "--warmup", "100"],
    ),
    Bench(
        "pool_pacing",
        pacing_figures,
        tiny=["--rows", "300", "--seconds", "5", "--settle", "2"],
        reduced=["--rows", "2000", "--seconds", "20", "--settle", "3"],
    ),
    Bench(
        "pool_fairness",
        fairness_figures,
        tiny=["--rows", "400", "--small", "20", "--settle", "1"],
        reduced=["--rows", "5000", "--small", "200"],
    ),
    Bench(
        "automation_throughput",
        None,  # writes its own `table` rows
        tiny=["--sizes", "20,200", "--warmup", "10", "--seconds", "5"],
        reduced=["--events", "1000", "--warmup", "50", "--seconds", "20"],  # sizes 10, 100, 1,000
        full=["--events", "100000"],  # issue 12's growth check: sizes 1,000, 10,000, 100,000; latency 60 s
    ),
    Bench("campaign_fanout", fanout_figures, tiny=["--sizes", "500,5000"], reduced=["--sizes", "2000,20000"]),
    Bench(
        "admin_pages",
        admin_figures,
        tiny=["--contacts", "1000", "--sends", "10000", "--runs", "1"],
        reduced=["--contacts", "10000", "--sends", "100000", "--runs", "3"],
    ),
    Bench(
        "api_latency",
        api_figures,
        tiny=["--seconds", "3", "--warmup", "1", "--rounds", "1"],
        reduced=["--seconds", "10", "--warmup", "2", "--rounds", "1"],
    ),
    Bench(
        "inbox_pipeline",
        inbox_figures,
        tiny=["--messages", "30", "--warmup", "5"],
        reduced=["--messages", "200", "--warmup", "20"],
    ),
    Bench("bounce_intake", None, tiny=["--rounds", "1"], reduced=["--rounds", "5"]),  # writes its `figures`
]


# --- running -----------------------------------------------------------------------------------------------


def run_one(bench: Bench, profile: str, log_dir: Path) -> list[Figure]:
    path = bench.json_path
    path.unlink(missing_ok=True)
    cmd = [sys.executable, str(BASE_DIR / "bench" / f"{bench.name}.py"), *bench.args(profile)]
    print(f"\n=== {bench.name}: {' '.join(cmd[1:])}", flush=True)
    started = time.monotonic()
    log = log_dir / f"{bench.name}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            cmd, cwd=BASE_DIR, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = proc.wait(timeout=bench.timeout[profile])
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the script's own process group (its workers, web server, sink)
            proc.wait()
            code = None
    seconds = time.monotonic() - started
    load = os.getloadavg()[0]
    print(log.read_text(errors="replace")[-3000:], flush=True)
    print(
        f"=== {bench.name}: exit {code} after {seconds:.0f} s (load average {load:.2f}); log {log}",
        flush=True,
    )
    if not path.exists():
        why = "timed out" if code is None else f"exit {code}, no JSON"
        return [Figure(bench.name, f"({why}; see {log.relative_to(BASE_DIR)})", None, load_average=load)]
    data = json.loads(path.read_text())
    uniform = data.get("figures") or data.get("table") if isinstance(data, dict) else None
    if isinstance(uniform, list) and uniform and isinstance(uniform[0], dict) and "figure" in uniform[0]:
        rows = [_uniform(bench.name, row) for row in uniform]
    elif bench.figures is not None:
        rows = bench.figures(data)
    else:
        rows = [Figure(bench.name, f"(no figures in its JSON; see {log.relative_to(BASE_DIR)})", None)]
    for row in rows:
        row.load_average = load
    return rows


def _uniform(script: str, row: dict[str, Any]) -> Figure:
    """A row a script wrote itself (`figures` or `table`: figure, value, baseline, target, met[, unit, ratio])."""
    known = {k: row[k] for k in ("figure", "value", "unit", "baseline", "ratio", "target", "met") if k in row}
    known["target"] = str(known.get("target") or "")
    figure = Figure(script=script, **{"value": None, **known})
    if (
        figure.ratio is None
        and isinstance(figure.value, int | float)
        and isinstance(figure.baseline, int | float)
    ):
        figure.ratio = _ratio(float(figure.value), float(figure.baseline))
    return figure


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"


def _verdict(r: Figure) -> str:
    if r.met is not None:
        return "met" if r.met else "MISSED"
    return "MISSED (not measured)" if r.value is None and r.target else "—"


def table(rows: list[Figure]) -> str:
    head = ("figure", "value", "baseline", "ratio", "target", "result", "load")
    lines = [
        (
            f"{r.script}: {r.figure}",
            f"{_fmt(r.value)} {r.unit}".strip(),
            _fmt(r.baseline) if r.baseline is not None else "",
            _fmt(r.ratio) if r.ratio is not None else "",
            r.target,
            _verdict(r),
            _fmt(r.load_average),
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines, strict=False)]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out)


def main() -> int:
    names = [b.name for b in BENCHES]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=("tiny", "reduced", "full"), default="reduced")
    p.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(names)}")
    p.add_argument("--json", default=str(BASE_DIR / "var" / "bench.json"))
    args = p.parse_args()
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(only) - set(names))
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(unknown)}")
    log_dir = OUT_DIR / "run-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    started = time.monotonic()
    rows: list[Figure] = []
    for bench in BENCHES:
        if only and bench.name not in only:
            continue
        rows += run_one(bench, args.profile, log_dir)
    seconds = time.monotonic() - started
    load_end = os.getloadavg()
    print(f"\nBenchmarks ({args.profile} sizes), {seconds / 60:.1f} min in all, {os.cpu_count()} CPUs, "
          f"load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}\n")  # fmt: skip
    server = server_settings(
        os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    print(server_line(server))
    print(table(rows))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "profile": args.profile,
                "seconds": round(seconds, 1),
                "cpus": os.cpu_count(),
                "load_average_start": load_start,
                "load_average_end": load_end,
                "postgresql": server,
                "figures": [asdict(r) for r in rows],
            },
            indent=2,
        )
    )
    print(f"\nwritten to {out}")
    broken = [r for r in rows if r.figure.startswith("(")]  # a script that crashed or timed out
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
