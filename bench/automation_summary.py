"""The summary of `automation_throughput.py`: issue 12's targets and baseline, the per-size table and the
figure / baseline / ratio / target / met table (also written into the results as `table`)."""

from __future__ import annotations

import argparse
import os

TARGET_STEPS_PER_SECOND = 300.0
TARGET_P50_SECONDS = 1.0
TARGET_P95_SECONDS = 3.0
TARGET_GROWTH = 1.2  # time per step and peak RSS from the smallest to the largest size: within 20 %
TARGET_API_RATIO = 0.3  # events API ≥ 0.3 × the requests/s of a minimal DRF view inserting one row (same run)
# Issue 12's figures before the batched walker (idle 2-core machine, --events 3000 --seconds 30): the baseline
# the ratios are printed against.
BASELINE = {"steps_per_second": 42.0, "events_per_second": 41.0, "p50_ms": 37_000.0}


def summarize(results: dict, args: argparse.Namespace) -> None:
    """Print the per-size table and the summary; add `table` and the verdicts to `results`."""
    first, last = results["per_size"][0], results["per_size"][-1]
    growth_time = last["walker_alone_ms_per_step"] / first["walker_alone_ms_per_step"]
    growth_rss = last["walker_alone_peak_rss_mib"] / first["walker_alone_peak_rss_mib"]
    rows = [
        # name, figure, baseline, target text, met, unit
        (
            "walker steps/s (walker alone, largest size)",
            results["steps_per_second"],
            BASELINE["steps_per_second"],
            f">= {TARGET_STEPS_PER_SECOND:.0f}",
            results["steps_per_second"] >= TARGET_STEPS_PER_SECOND,
        ),
        (
            "events API events/s",
            results["events_per_second"],
            BASELINE["events_per_second"],
            "(none here)",
            None,
        ),
        (
            "events API ÷ minimal DRF view (same run)",
            results["events_per_second"],
            results["baseline_requests_per_second"],
            f">= {TARGET_API_RATIO} ×",
            results["events_per_second"] >= TARGET_API_RATIO * results["baseline_requests_per_second"],
        ),
        (
            f"event → first email p50 ms at {args.rate:g}/s",
            results["latency_p50_ms"],
            BASELINE["p50_ms"],
            f"< {TARGET_P50_SECONDS * 1000:.0f}",
            results["latency_p50_ms"] < TARGET_P50_SECONDS * 1000,
        ),
        (
            f"event → first email p95 ms at {args.rate:g}/s",
            results["latency_p95_ms"],
            None,
            f"< {TARGET_P95_SECONDS * 1000:.0f}",
            results["latency_p95_ms"] < TARGET_P95_SECONDS * 1000,
        ),
        (
            f"time/step growth {first['size']}→{last['size']}",
            round(growth_time, 2),
            None,
            f"<= {TARGET_GROWTH}",
            growth_time <= TARGET_GROWTH,
        ),
        (
            f"peak RSS growth {first['size']}→{last['size']}",
            round(growth_rss, 2),
            None,
            f"<= {TARGET_GROWTH}",
            growth_rss <= TARGET_GROWTH,
        ),
    ]
    print("\nPer size (phase 1)")
    print(
        f"  {'size':>8} {'API path s':>10} {'steps/s':>8} {'RSS MiB':>8} | {'walker s':>9} {'steps/s':>8} "
        f"{'ms/step':>8} {'RSS MiB':>8} {'load':>5}"
    )
    for r in results["per_size"]:
        print(
            f"  {r['size']:>8} {r['walker_seconds']:>10.1f} {r['steps_per_second']:>8.1f} {r['peak_rss_mib']:>8.0f} | "
            f"{r['walker_alone_seconds']:>9.1f} {r['walker_alone_steps_per_second']:>8.1f} "
            f"{r['walker_alone_ms_per_step']:>8.2f} {r['walker_alone_peak_rss_mib']:>8.0f} {r['walker_alone_load']:>5.1f}"
        )
    print("\nSummary (baseline: issue 12's figures before the batched walker; ratio = figure / baseline)")
    print(f"  {'figure':<42} {'value':>10} {'baseline':>10} {'ratio':>7} {'target':>10}  result")
    table = []
    for name, value, baseline, target, met in rows:
        ratio = f"{value / baseline:.2f}" if baseline else "—"
        verdict = "—" if met is None else ("met" if met else "MISSED")
        print(
            f"  {name:<42} {value:>10} {baseline if baseline is not None else '—':>10} {ratio:>7} {target:>10}  {verdict}"
        )
        table.append({"figure": name, "value": value, "baseline": baseline, "target": target, "met": met})
    results.update(
        table=table,
        steps_target_met=rows[0][4],
        p50_target_met=rows[3][4],
        api_ratio_target_met=rows[2][4],
        cpus=os.cpu_count(),
        load_average_at_end=os.getloadavg(),
    )
    print(
        f"  machine: {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f} (other work included)"
    )
