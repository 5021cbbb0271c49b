"""Production code stays readable in pieces: no function over 80 lines, no module over 500 lines.

Production code is every `.py` file of the apps except migrations and tests (testsupport/ and bench/ are
outside the apps). `owlat/settings.py` is one flat list of settings and may be longer. The entries of
`LONG_FUNCTIONS` and `LONG_MODULES` are being split elsewhere: each may not grow past the length recorded here,
and an entry that is back under the limit fails too, so the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("owlat", "templates", "delivery", "automations", "campaigns", "inbox")
FUNCTION_LIMIT = 80
MODULE_LIMIT = 500
MAY_BE_LONGER = frozenset({"owlat/settings.py"})

#: "path:function" → its length today (lines, decorators excluded)
LONG_FUNCTIONS: dict[str, int] = {}
#: "path" → its length today (lines)
LONG_MODULES: dict[str, int] = {}


def _production_modules() -> list[tuple[str, Path]]:
    out = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel or "/tests/" in rel or path.name.startswith("test_"):
                continue
            out.append((rel, path))
    return out


def _function_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for rel, path in _production_modules():
        for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"{rel}:{node.name}"
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                lengths[key] = max(length, lengths.get(key, 0))
    return lengths


def _module_lengths() -> dict[str, int]:
    return {rel: len(path.read_text().splitlines()) for rel, path in _production_modules()}


def _over(lengths: dict[str, int], limit: int, allowed: dict[str, int]) -> list[str]:
    return sorted(
        f"{name} ({length} lines)"
        for name, length in lengths.items()
        if length > limit and length > allowed.get(name, 0)
    )


def test_no_production_function_is_over_80_lines():
    over = _over(_function_lengths(), FUNCTION_LIMIT, LONG_FUNCTIONS)
    assert not over, f"split these into named helpers of at most {FUNCTION_LIMIT} lines: {over}"


def test_no_production_module_is_over_500_lines():
    lengths = {k: v for k, v in _module_lengths().items() if k not in MAY_BE_LONGER}
    over = _over(lengths, MODULE_LIMIT, LONG_MODULES)
    assert not over, f"split these modules to at most {MODULE_LIMIT} lines: {over}"


def test_the_lists_of_long_functions_and_modules_only_shrink():
    functions, modules = _function_lengths(), _module_lengths()
    stale = [name for name in LONG_FUNCTIONS if functions.get(name, 0) <= FUNCTION_LIMIT]
    stale += [name for name in LONG_MODULES if modules.get(name, 0) <= MODULE_LIMIT]
    assert not stale, f"under the limit now, drop from LONG_FUNCTIONS / LONG_MODULES: {stale}"


def test_the_scan_finds_a_long_function():
    source = "def f():\n" + "    x = 1\n" * FUNCTION_LIMIT
    tree = ast.parse(source)
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    assert node.end_lineno - node.lineno + 1 == FUNCTION_LIMIT + 1
    assert _over({"a.py:f": FUNCTION_LIMIT + 1}, FUNCTION_LIMIT, {}) == [
        f"a.py:f ({FUNCTION_LIMIT + 1} lines)"
    ]
    assert _over({"a.py:f": 86}, FUNCTION_LIMIT, {"a.py:f": 86}) == []
    assert _over({"a.py:f": 87}, FUNCTION_LIMIT, {"a.py:f": 86}) == ["a.py:f (87 lines)"]
