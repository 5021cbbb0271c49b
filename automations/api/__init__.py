"""The automations app's part of `/api/v1`: events (API-21) and automations, steps, runs, stats (API-27, API-28)."""
