"""House-style layering, checked by parsing every import (module level and inside functions):

    owlat (kernel)  ←  templates  ←  delivery  ←  automations, campaigns, inbox

The kernel imports no app; `templates` imports only the kernel; `delivery` imports no engine; the engines
(automations, campaigns, inbox) do not import each other. A lower layer reaches a higher one only through the
registries the higher layer fills in `AppConfig.ready()`. Test code (`tests/` packages, `conftest.py`) is exempt;
production code never imports the test support package `testsupport`. `importlib.import_module("…")` / `import_string("…")` calls with a
literal argument count as imports too.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("owlat", "templates", "delivery", "automations", "campaigns", "inbox")
ALLOWED = {
    "owlat": {"owlat"},
    "templates": {"owlat", "templates"},
    "delivery": {"owlat", "templates", "delivery"},
    "automations": {"owlat", "templates", "delivery", "automations"},
    "campaigns": {"owlat", "templates", "delivery", "campaigns"},
    "inbox": {"owlat", "templates", "delivery", "inbox"},
}
DYNAMIC_IMPORTERS = {"import_module", "import_string", "__import__"}


def _is_test_code(path: Path) -> bool:
    rel = path.relative_to(ROOT)
    return "tests" in rel.parts or rel.name == "conftest.py"


def _source_files(app: str) -> list[Path]:
    return sorted(p for p in (ROOT / app).rglob("*.py") if not _is_test_code(p))


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path, root)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((node.lineno, module))
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if (
                name in DYNAMIC_IMPORTERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append((node.lineno, node.args[0].value))
    return found


def violations(app: str, files: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    out = []
    for path in _source_files(app) if files is None else files:
        for line, module in imported_modules(path, root):
            top = module.split(".")[0]
            if (top in APPS and top not in ALLOWED[app]) or top == "testsupport":
                out.append(f"{path.relative_to(root)}:{line} imports {module}")
    return out


@pytest.mark.parametrize("app", APPS)
def test_imports_point_down_the_layers(app):
    assert violations(app) == []


def test_every_app_has_source_to_check():
    for app in APPS:
        assert _source_files(app), app


def test_the_checker_sees_relative_lazy_and_dynamic_imports(tmp_path):
    sample = tmp_path / "delivery" / "probe.py"
    sample.parent.mkdir()
    sample.write_text(
        "from . import models\n"
        "from .pool import run\n"
        "def f():\n"
        "    from campaigns.lifecycle import x\n"
        "    import inbox.tasks\n"
        "    importlib.import_module('automations.fanout')\n"
        "    return import_string('owlat.audit.audit_write')\n"
        "from testsupport import drain_queue\n"
    )
    assert sorted(imported_modules(sample, tmp_path)) == [
        (1, "delivery"),
        (2, "delivery.pool"),
        (4, "campaigns.lifecycle"),
        (5, "inbox.tasks"),
        (6, "automations.fanout"),
        (7, "owlat.audit.audit_write"),
        (8, "testsupport"),
    ]
    assert sorted(violations("delivery", [sample], tmp_path)) == [
        "delivery/probe.py:4 imports campaigns.lifecycle",
        "delivery/probe.py:5 imports inbox.tasks",
        "delivery/probe.py:6 imports automations.fanout",
        "delivery/probe.py:8 imports testsupport",
    ]
    assert "delivery/probe.py:5 imports inbox.tasks" in violations("campaigns", [sample], tmp_path)
