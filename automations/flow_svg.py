"""A server-rendered SVG picture of an automation's steps and branches: one box per step, top to bottom, an
arrow to the step each one leads to (yes on the left, no on the right), "end" where a run completes. Text is
escaped; no script, so the picture is safe inline in the admin page."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from automations.flow import FlowStep, targets

BOX_W, BOX_H, GAP, LEFT, TOP = 380, 40, 34, 90, 16
COLOURS = {"email": "#e3f0fb", "delay": "#f3f3f3", "condition": "#fff4d6", "end": "#e6e6e6"}


def _y(i: int) -> int:
    return TOP + i * (BOX_H + GAP)


def _arrow(x1: int, y1: int, x2: int, y2: int, side: int, label: str) -> str:
    if side == 0:
        path = f"M{x1},{y1} L{x2},{y2}"
        lx, ly = x1 + 6, (y1 + y2) // 2 + 4
    else:
        bend = x1 + side * (40 + abs(y2 - y1) // 12)
        path = f"M{x1},{y1} C{bend},{y1} {bend},{y2} {x2},{y2}"
        lx, ly = bend + (6 if side > 0 else -30), (y1 + y2) // 2
    text = f'<text x="{lx}" y="{ly}" font-size="11">{escape(label)}</text>' if label else ""
    return f'<path d="{path}" fill="none" stroke="#555" marker-end="url(#arrow)"/>{text}'


def flow_svg(steps: list[FlowStep], labels: dict[int, str]) -> SafeString:
    """`labels`: a one-line summary per step index."""
    if not steps:
        return mark_safe("<p>No steps yet.</p>")
    last = max(s.index for s in steps)
    end_y = _y(last + 1)
    parts = []
    for s in steps:
        y = _y(s.index)
        fill = COLOURS.get(s.step_type, "#fff")
        rx = 18 if s.step_type == "end" else 4
        text = labels.get(s.index) or s.step_type
        text = text if len(text) <= 58 else text[:57] + "…"
        parts.append(
            f'<g class="flow-step" data-step="{s.index}"><rect x="{LEFT}" y="{y}" width="{BOX_W}" '
            f'height="{BOX_H}" rx="{rx}" fill="{fill}" stroke="#888"/>'
            f'<text x="{LEFT - 8}" y="{y + 25}" font-size="12" text-anchor="end">step {s.index}</text>'
            f'<text x="{LEFT + 10}" y="{y + 25}" font-size="12">{escape(text)}</text></g>'
        )
        for name, target in targets(s).items():
            ty = _y(target) if target <= last else end_y
            side = {"next": 0, "yes": -1, "no": 1}[name]
            if name != "next" and target == s.index + 1:
                side = 0 if name == "yes" else 1
            x = LEFT if side < 0 else LEFT + BOX_W if side > 0 else LEFT + BOX_W // 2
            start_y = y + BOX_H // 2 if side else y + BOX_H
            end_at = ty + BOX_H // 2 if side and target <= last else ty
            label = "" if name == "next" else name
            parts.append(_arrow(x, start_y, x, end_at, side, label))
    parts.append(
        f'<text x="{LEFT + BOX_W // 2}" y="{end_y + 14}" font-size="12" text-anchor="middle">'
        "run completes</text>"
    )
    height = end_y + 30
    width = LEFT + BOX_W + 150
    return mark_safe(
        f'<svg id="automation-flow" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="Flow of the steps">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>'
        + "".join(parts)
        + "</svg>"
    )
