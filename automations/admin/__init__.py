"""Admin screens of the automations app (D-12: the admin is the product UI), one module per screen:

- `editor`: automations — the editor (trigger and its config, steps inline in order, branch targets chosen from
  the step list), lifecycle buttons that call `automations.lifecycle` and show its message, counters and the
  step funnel. Structural step edits go through `automations.services` (draft only, branch targets remapped,
  AUT-02); the status is read-only.
- `runs`: a read-only browser of runs with the per-run timeline of step runs (status, times, retries, error, the
  linked send row).
"""

from automations.admin import editor, runs  # noqa: F401  (importing registers the screens)
