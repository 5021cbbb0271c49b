"""Requests per second of `POST /api/v1/contacts` and `POST /api/v1/events` under gunicorn, for this tree and a
second checkout (the "before" of issue 7), measured in one run and printed side by side with the load average.

    git worktree add /work/wt/api-before 4570ea4          # once: the tree before the DRF rework
    .venv/bin/python bench/api_latency.py --before /work/wt/api-before

Each tree gets its own fresh PostgreSQL database (migrated by that tree), its own gunicorn (`--workers`
sync workers) and its own keys. The per-key limit is raised for the benchmark (`API_RATE_LIMIT_PER_SECOND`
and `API_RATE_LIMIT_BURST` = 1,000,000; spec D-17): every request still takes a token from the database
bucket, as in production, but the limiter never refuses, so it is not what is measured. Load comes from
`--concurrency` client threads with keep-alive sessions, one key per thread; the trees are measured in
alternating rounds (`--rounds`) and the median per tree is reported. Without `--before`, only this tree.
Results also go to `var/bench/api_latency.json`. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BASE_DIR, PY, base_env, recreate_database
from testsupport.waiting import free_port

DB_BASE = "postgres://postgres@127.0.0.1:5432"
SETUP = r"""
import json, sys
from owlat.organizations import organization_create
from owlat.apikeys import api_key_create
org = organization_create(name="Bench")
scopes = ["contacts:read", "contacts:write", "events:write"]
keys = [api_key_create(organization_id=org.pk, name=f"bench-{i}", scopes=scopes)[1] for i in range(int(sys.argv[1]))]
print("KEYS " + json.dumps(keys))
"""


class Tree:
    def __init__(self, label: str, path: Path, workers: int, keys: int) -> None:
        self.label, self.path = label, path
        self.url_db = f"{DB_BASE}/owlat_bench_api_{label}"
        self.port = free_port()
        self.env = base_env(
            self.url_db,
            API_RATE_LIMIT_PER_SECOND="1000000",
            API_RATE_LIMIT_BURST="1000000",
            SITE_URL=f"http://127.0.0.1:{self.port}",
        )
        self.env["PYTHONPATH"] = str(path)
        recreate_database(self.url_db)
        self._manage("migrate", "--verbosity", "0")
        out = subprocess.run(
            [PY, "-c", "import django; django.setup(); exec(open(0).read())", str(keys)],
            input=SETUP,
            cwd=path,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        self.keys = json.loads(next(line for line in out.splitlines() if line.startswith("KEYS "))[5:])
        self.server = subprocess.Popen(
            [PY, "-m", "gunicorn", "owlat.wsgi:application", "--chdir", str(path), "--bind",
             f"127.0.0.1:{self.port}", "--workers", str(workers), "--log-level", "warning"],
            cwd=path,
            env=self.env,
        )  # fmt: skip
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if requests.get(f"{self.base}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                time.sleep(0.3)
        raise RuntimeError(f"gunicorn for {label} did not answer /api/v1/health")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def _manage(self, *args: str) -> None:
        subprocess.run([PY, "manage.py", *args], cwd=self.path, env=self.env, check=True)

    def stop(self) -> None:
        self.server.terminate()
        try:
            self.server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.server.kill()


def body_for(endpoint: str, label: str, n: int) -> dict:
    if endpoint == "contacts":
        return {"email": f"c{n}-{label}-{time.monotonic_ns()}@bench.example.com", "firstName": "Bench"}
    return {
        "email": f"e{n % 50}@bench.example.com",
        "eventName": "bench_event",
        "eventProperties": {"plan": "pro", "n": n},
        "createContactIfNotExists": True,
    }


def measure(tree: Tree, endpoint: str, seconds: float, concurrency: int, warmup: float) -> dict:
    counter = itertools.count()
    done: list[int] = []
    errors: list[int] = []
    stop_at = [0.0]
    start_at = [0.0]

    def worker(key: str) -> None:
        session = requests.Session()
        session.headers.update({"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        ok = bad = 0
        while True:
            now = time.monotonic()
            if now >= stop_at[0]:
                break
            response = session.post(
                f"{tree.base}/{endpoint}", data=json.dumps(body_for(endpoint, tree.label, next(counter)))
            )
            if now >= start_at[0]:
                if response.status_code in (200, 201):
                    ok += 1
                else:
                    bad += 1
        done.append(ok)
        errors.append(bad)

    begin = time.monotonic()
    start_at[0] = begin + warmup
    stop_at[0] = start_at[0] + seconds
    threads = [
        threading.Thread(target=worker, args=(tree.keys[i % len(tree.keys)],)) for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"rps": sum(done) / seconds, "ok": sum(done), "errors": sum(errors)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--before", type=Path, help="a second checkout to compare with (e.g. /work/wt/api-before)"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per endpoint and round")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8, help="client threads")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers per tree")
    args = parser.parse_args()

    load_before = os.getloadavg()
    trees = [("after", BASE_DIR)]
    if args.before:
        trees.append(("before", args.before.resolve()))
    started: list[Tree] = []
    try:
        for label, path in trees:
            started.append(Tree(label, path, args.workers, args.concurrency))
        results: dict[str, dict[str, list[dict]]] = {t.label: {"contacts": [], "events": []} for t in started}
        for round_no in range(args.rounds):
            for endpoint in ("contacts", "events"):
                order = started if round_no % 2 == 0 else list(reversed(started))
                for tree in order:
                    results[tree.label][endpoint].append(
                        measure(tree, endpoint, args.seconds, args.concurrency, args.warmup)
                    )
    finally:
        for tree in started:
            tree.stop()
    load_after = os.getloadavg()

    summary = {
        label: {ep: statistics.median(r["rps"] for r in runs) for ep, runs in by_ep.items()}
        for label, by_ep in results.items()
    }
    print(f"\nPOST requests/second under gunicorn ({args.workers} workers, {args.concurrency} clients, "
          f"{args.rounds} rounds x {args.seconds:.0f} s, median)")  # fmt: skip
    for endpoint in ("contacts", "events"):
        line = f"  /api/v1/{endpoint:<9}"
        for label in summary:
            errors = sum(r["errors"] for r in results[label][endpoint])
            line += f"  {label}: {summary[label][endpoint]:7.1f}/s ({errors} non-2xx)"
        if "before" in summary:
            ratio = summary["after"][endpoint] / summary["before"][endpoint]
            verdict = "REGRESSION (> 10 % below before)" if ratio < 0.9 else "ok"
            line += f"  after/before {ratio:.2f} {verdict}"
        print(line)
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
          f"after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; cores: {os.cpu_count()}")  # fmt: skip
    out = BASE_DIR / "var" / "bench" / "api_latency.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"args": {k: str(v) for k, v in vars(args).items()}, "results": results, "median_rps": summary,
             "loadavg": {"before": load_before, "after": load_after}},
            indent=2,
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
