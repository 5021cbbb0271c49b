"""Raw SQL is contained: `cursor.execute` appears only in an app's `sql.py` (or the kernel's `owlat/sql.py`).

The modules in `NOT_YET_MOVED` still execute their own statements; each is to move into its app's `sql.py`, and
the list may only shrink (a listed module without a statement fails too, so the list cannot go stale).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("owlat", "templates", "delivery", "automations", "campaigns", "inbox")

NOT_YET_MOVED: frozenset[str] = frozenset()


def _production_modules() -> list[tuple[str, Path]]:
    out = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel or "/tests/" in rel or path.name.startswith("test_"):
                continue
            out.append((rel, path))
    return out


def _executes(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("execute", "executemany")
        and any(name in ast.unparse(node.func.value).lower() for name in ("cursor", "schema_editor"))
    ]


def _allowed(rel: str) -> bool:
    return rel.endswith("/sql.py")


def test_cursor_execute_appears_only_in_the_apps_sql_modules():
    offenders = {
        f"{rel}:{line}"
        for rel, path in _production_modules()
        if not _allowed(rel) and rel not in NOT_YET_MOVED
        for line in _executes(path)
    }
    assert not offenders, f"move these statements into the app's sql.py: {sorted(offenders)}"


def test_the_list_of_modules_not_yet_moved_only_shrinks():
    still = {rel for rel, path in _production_modules() if rel in NOT_YET_MOVED and _executes(path)}
    assert still == NOT_YET_MOVED, (
        f"no statement left here, drop from NOT_YET_MOVED: {sorted(NOT_YET_MOVED - still)}"
    )
