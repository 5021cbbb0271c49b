"""The minimal DRF view the events API is compared with (issue 12's target: the events API under gunicorn ≥ 0.3 ×
its requests/s, measured in the same run). Bench-only: installed and mounted by `bench.baseline.settings`
alone, which only `bench/automation_throughput.py` gives its gunicorn; `owlat.settings` never sees it."""
