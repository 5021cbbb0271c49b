#!/usr/bin/env python
"""Block template rendering benchmark (email authoring: a 20-block template renders in under 50 ms p95).

Workload (no database): a 20-block document — 4 headings, 6 rich-text blocks, 2 images, 2 buttons, a divider,
a spacer, 2 two-column blocks (each with a text and a button), social links and a footer. Each timed run is the
whole path a save takes (templates.block_render.render_document: validation with the pydantic schema, MJML
through mjml-python, CSS inlining with css-inline, the plain-text part) plus the per-recipient personalization
of the result (templates.rendering.compile_text + render). `--runs` timed runs after `--warmup` runs; printed:
p50, p95 and max in milliseconds and whether the p95 target (50 ms) is met. A missed target is reported as missed.

Run: `.venv/bin/python bench/block_render.py` (a few seconds; `--runs 20` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "owlat.settings")
os.environ.setdefault("OWLAT_TESTING", "1")
TARGET_P95_MS = 50.0


def document() -> dict:
    text = "<div>Hello {{firstName|'there'}}, <strong>this</strong> is <em>rich</em> text with a <a href='https://example.com/a'>link</a>.</div><ul><li>One</li><li>Two</li></ul>"
    blocks: list[dict] = []
    for i in range(4):
        blocks.append(
            {"id": f"h{i}", "type": "heading", "text": f"Section {i} for {{{{firstName}}}}", "level": 2}
        )
        blocks.append({"id": f"t{i}", "type": "text", "html": text})
    blocks += [
        {"id": "t8", "type": "text", "html": text},
        {"id": "t9", "type": "text", "html": text},
        {
            "id": "i1",
            "type": "image",
            "src": "https://cdn.example.com/a.png",
            "alt": "A",
            "width": 600,
            "height": 300,
        },
        {
            "id": "i2",
            "type": "image",
            "src": "https://cdn.example.com/b.png",
            "alt": "B",
            "width": 300,
            "height": 200,
            "href": "https://example.com",
        },
        {"id": "b1", "type": "button", "label": "Read more", "href": "https://example.com/more"},
        {"id": "b2", "type": "button", "label": "Shop", "href": "https://example.com/shop"},
        {"id": "d1", "type": "divider"},
        {"id": "s1", "type": "spacer", "height": 20},
    ]
    for c in range(2):
        blocks.append(
            {
                "id": f"c{c}",
                "type": "columns",
                "columns": [
                    {"blocks": [{"id": f"c{c}t", "type": "text", "html": text}]},
                    {
                        "blocks": [
                            {
                                "id": f"c{c}b",
                                "type": "button",
                                "label": "Go",
                                "href": "https://example.com/go",
                            }
                        ]
                    },
                ],
            }
        )
    blocks.append(
        {
            "id": "so",
            "type": "social",
            "links": [
                {"network": "x", "url": "https://x.com/e"},
                {"network": "github", "url": "https://github.com/e"},
            ],
        }
    )
    blocks.append({"id": "f", "type": "footer", "text": "You signed up on our site."})
    assert len(blocks) == 20, len(blocks)
    return {"version": 1, "blocks": blocks}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    import django

    django.setup()
    from templates.block_render import render_document
    from templates.blocks import document_clean
    from templates.rendering import compile_text

    source = document()
    variables = {
        "firstName": "Robin",
        "unsubscribeUrl": "https://example.com/u",
        "preferencesUrl": "https://example.com/p",
    }

    def once() -> None:
        rendered = render_document(document_clean(source), preview_text="Preheader")
        compile_text(rendered.html).render(variables, escape=True)
        compile_text(rendered.text).render(variables)

    for _ in range(args.warmup):
        once()
    samples = []
    for _ in range(args.runs):
        start = time.perf_counter()
        once()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    figures = {"runs": args.runs, "p50_ms": statistics.median(samples), "p95_ms": p95, "max_ms": samples[-1]}
    met = "met" if p95 < TARGET_P95_MS else "MISSED"
    print(
        f"20-block render: p50 {figures['p50_ms']:.2f} ms, p95 {p95:.2f} ms, max {figures['max_ms']:.2f} ms "
        f"over {args.runs} runs; target p95 < {TARGET_P95_MS:.0f} ms: {met}; load {os.getloadavg()[0]:.1f}"
    )
    if args.json:
        args.json.write_text(json.dumps({**figures, "target_p95_ms": TARGET_P95_MS, "met": met == "met"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
