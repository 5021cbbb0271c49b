"""Print the codebase's size and shape figures as Markdown tables.

Usage: `python scripts/codebase_figures.py [ROOT]` (ROOT defaults to this checkout). Production code is every
`.py` file of the apps except migrations, tests, testsupport and bench. The figures:

- production lines per app (physical lines, and non-blank lines);
- raw-SQL sites: `cursor.execute` / `executemany` calls, and string literals that read as SQL (and how many of
  both are outside an `sql.py` module);
- PostgreSQL-only branches: comparisons with a `.vendor` attribute (`connection.vendor == "postgresql"`);
- functions over 80 lines, and modules over 500 lines;
- `duplicates` pairs that are not shape-only (the library's `duplicates` command, when it is on PATH).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

APPS = ("owlat", "templates", "delivery", "automations", "campaigns", "inbox")
EXCLUDED_PARTS = ("migrations", "tests", "testsupport", "bench")
FUNCTION_LIMIT = 80
MODULE_LIMIT = 500
SQL_LITERAL = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s|WITH\s+\w+\s*(\(|AS\s*\())",
    re.DOTALL,
)


@dataclass
class AppFigures:
    lines: int = 0
    code_lines: int = 0
    executes: int = 0
    sql_literals: int = 0
    sql_outside: int = 0
    vendor_branches: int = 0
    long_functions: list[str] = field(default_factory=list)
    long_modules: list[str] = field(default_factory=list)


def production_modules(root: Path) -> list[Path]:
    """Every production `.py` file under the apps, sorted."""
    out = []
    for app in APPS:
        for path in sorted((root / app).rglob("*.py")):
            parts = path.relative_to(root).parts
            if any(part in EXCLUDED_PARTS for part in parts) or path.name.startswith("test_"):
                continue
            out.append(path)
    return out


def _is_execute(node: ast.Call) -> bool:
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in ("execute", "executemany")
        and any(name in ast.unparse(func.value).lower() for name in ("cursor", "schema_editor"))
    )


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else " x "
            for part in node.values
        )
    return None


def _is_vendor_branch(node: ast.Compare) -> bool:
    operands = [node.left, *node.comparators]
    return any(isinstance(op, ast.Attribute) and op.attr == "vendor" for op in operands)


def _joined_str_parts(tree: ast.AST) -> set[int]:
    """ids of the string constants inside f-strings (they are counted with their f-string)."""
    return {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
        if isinstance(part, ast.Constant)
    }


def module_figures(path: Path, rel: str, figures: AppFigures) -> None:
    """Add one module's figures to its app's."""
    text = path.read_text()
    lines = text.splitlines()
    figures.lines += len(lines)
    figures.code_lines += sum(1 for line in lines if line.strip())
    if len(lines) > MODULE_LIMIT:
        figures.long_modules.append(f"{rel} ({len(lines)})")
    tree = ast.parse(text, filename=rel)
    inner = _joined_str_parts(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_execute(node):
            figures.executes += 1
            figures.sql_outside += not rel.endswith("/sql.py")
        elif isinstance(node, ast.Compare) and _is_vendor_branch(node):
            figures.vendor_branches += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LIMIT:
                figures.long_functions.append(f"{rel}:{node.name} ({length})")
        elif id(node) not in inner:
            literal = _literal_text(node)
            if literal is not None and SQL_LITERAL.match(literal):
                figures.sql_literals += 1
                figures.sql_outside += not rel.endswith("/sql.py")


def collect(root: Path) -> dict[str, AppFigures]:
    """The figures of each app under `root`."""
    per_app = {app: AppFigures() for app in APPS}
    for path in production_modules(root):
        rel = path.relative_to(root).as_posix()
        module_figures(path, rel, per_app[rel.split("/", 1)[0]])
    return per_app


def duplicates_line(root: Path) -> str:
    """`duplicates`' summary: pairs in all, and those not shape-only (whole tree, tests included)."""
    tool = shutil.which("duplicates")
    if tool is None:
        return "duplicates: the command is not on PATH"
    result = subprocess.run(
        [tool, "--repo", str(root), "--seconds", "120"], capture_output=True, text=True, check=False
    )
    head = result.stdout.splitlines()[0] if result.stdout else ""
    match = re.match(r"(\d+) pairs .*\((\d+) by shape alone", head)
    if not match:
        return f"duplicates: {head or result.stderr.strip()}"
    total, shape = int(match[1]), int(match[2])
    return f"duplicates pairs (whole tree): {total}, not shape-only: {total - shape}"


def render(per_app: dict[str, AppFigures], duplicates: str) -> str:
    """The figures as Markdown."""
    rows = [
        "| app | lines | non-blank | cursor.execute | SQL literals | raw SQL outside sql.py | vendor branches "
        "| functions > 80 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = AppFigures()
    for app, fig in per_app.items():
        rows.append(
            f"| {app} | {fig.lines} | {fig.code_lines} | {fig.executes} | {fig.sql_literals} "
            f"| {fig.sql_outside} | {fig.vendor_branches} | {len(fig.long_functions)} |"
        )
        total.lines += fig.lines
        total.code_lines += fig.code_lines
        total.executes += fig.executes
        total.sql_literals += fig.sql_literals
        total.sql_outside += fig.sql_outside
        total.vendor_branches += fig.vendor_branches
        total.long_functions += fig.long_functions
        total.long_modules += fig.long_modules
    rows.append(
        f"| **total** | {total.lines} | {total.code_lines} | {total.executes} | {total.sql_literals} "
        f"| {total.sql_outside} | {total.vendor_branches} | {len(total.long_functions)} |"
    )
    rows += ["", f"Functions over {FUNCTION_LIMIT} lines: {', '.join(total.long_functions) or 'none'}"]
    rows += [f"Modules over {MODULE_LIMIT} lines: {', '.join(total.long_modules) or 'none'}", duplicates]
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    root = Path(argv[1]).resolve() if len(argv) > 1 else Path(__file__).resolve().parents[1]
    print(render(collect(root), duplicates_line(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
