"""style.md Layering: `owlat` ← `templates` ← `delivery` ← engines. Delivery and templates import no engine,
and templates does not import delivery (checked by parsing the imports)."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORBIDDEN = {
    "delivery": {"automations", "campaigns", "inbox"},
    "templates": {"automations", "campaigns", "inbox", "delivery"},
}


def imported_roots(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("app", sorted(FORBIDDEN))
def test_app_imports_point_one_way(app):
    offenders = {}
    for path in (ROOT / app).rglob("*.py"):
        if "tests" in path.parts:
            continue
        bad = imported_roots(path) & FORBIDDEN[app]
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}
