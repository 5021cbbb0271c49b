"""docs/settings.md lists exactly the environment variables the settings read: every `env.<type>("NAME")`,
`_required("NAME", …)` and `os.environ.get("NAME")` of `owlat/settings*.py`, and the django-anymail names of
`_ANYMAIL_ENV_NAMES`, each with a row; no row for a variable that is not read."""

from __future__ import annotations

import ast
import re
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DOC = BASE_DIR / "docs" / "settings.md"
_READERS = ("env", "_required", "os.environ.get", "os.getenv")


def read_in_settings() -> set[str]:
    names = set()
    for path in sorted((BASE_DIR / "owlat").glob("settings*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = ast.unparse(node.func)
                if isinstance(node.args[0].value, str) and (func.startswith("env.") or func in _READERS):
                    names.add(node.args[0].value)
            if isinstance(node, ast.Assign) and "_ANYMAIL_ENV_NAMES" in {
                ast.unparse(t) for t in node.targets
            }:
                names |= {e.value for e in node.value.elts}
    return names


def documented() -> set[str]:
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", DOC.read_text(), re.M))


def test_every_variable_the_settings_read_is_documented_and_nothing_else():
    read, doc = read_in_settings(), documented()
    assert not read - doc, f"read in owlat/settings*.py but not in docs/settings.md: {sorted(read - doc)}"
    assert not doc - read, f"in docs/settings.md but not read in owlat/settings*.py: {sorted(doc - read)}"


def test_the_scan_finds_each_way_of_reading():
    read = read_in_settings()
    assert {"DEBUG", "SECRET_KEY", "OWLAT_VAR_DIR", "POSTMARK_SERVER_TOKEN", "AXES_COOLOFF_MINUTES"} <= read
