"""docs/architecture.md's table of status fields is the code's: every status field `tests/test_status_writers.py`
finds is in it, with the module that declares its `Lifecycle` (or, for a field without one, a module that writes
it) and an entry function defined in that module."""

from __future__ import annotations

import ast
import importlib
import re

from tests.test_status_writers import APPS, BASE_DIR, find_writes, production_files, status_fields

DOC = BASE_DIR / "docs" / "architecture.md"
_ROW = re.compile(r"^\| `(?P<key>\w+\.\w+\.\w+)` \| `(?P<module>[\w/.]+)` \| (?P<entry>.+?) \|$")


def documented() -> dict[str, tuple[str, str | None]]:
    """status field → (writer module, entry function or None) as the document's table has them."""
    out = {}
    for line in DOC.read_text().splitlines():
        match = _ROW.match(line)
        if match:
            entry = re.match(r"`(\w+)`", match["entry"])
            out[match["key"]] = (match["module"], entry[1] if entry else None)
    return out


def _lifecycles() -> dict[str, str]:
    """ "app.Model.field" (concrete models and their proxies) → the module file declaring its `Lifecycle`."""
    from django.apps import apps

    from owlat.lifecycle import Lifecycle

    for app in APPS:
        for path in production_files(app):
            rel = path.relative_to(BASE_DIR)
            if "management" not in rel.parts and "admin" not in rel.parts:
                importlib.import_module(".".join(rel.with_suffix("").parts).removesuffix(".__init__"))
    found: dict[str, str] = {}
    todo = list(Lifecycle.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        model = getattr(cls, "model", None)
        test_only = ".tests." in cls.__module__ or cls.__module__.startswith(("tests.", "testsupport."))
        if model is None or test_only:  # a test's throwaway lifecycle (imported when the whole suite runs)
            continue
        module = cls.__module__.replace(".", "/") + ".py"
        for m in apps.get_models():
            if m._meta.concrete_model is model._meta.concrete_model:
                found[f"{m._meta.app_label}.{m.__name__}.{cls.field}"] = module
    return found


def _defines(module: str, name: str) -> bool:
    tree = ast.parse((BASE_DIR / module).read_text())
    return any(isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name for n in tree.body)


def test_every_status_field_is_in_the_architecture_table_with_its_writer():
    doc = documented()
    fields = {f.key: f for f in status_fields()}
    assert set(doc) == set(fields), "docs/architecture.md's status table differs from the models"
    lifecycles = _lifecycles()
    for key, (module, entry) in doc.items():
        assert (BASE_DIR / module).is_file(), f"{key}: no module {module}"
        if key in lifecycles:
            assert module == lifecycles[key], f"{key}: its Lifecycle is in {lifecycles[key]}, not {module}"
        elif entry is not None:
            writes = find_writes((BASE_DIR / module).read_text(), module, {fields[key].name})
            assert writes, f"{key}: {module} has no Lifecycle for it and writes no {fields[key].name}"
        if entry is not None:
            assert _defines(module, entry), f"{key}: {entry} is not defined in {module}"


def test_the_table_parser_reads_a_row():
    assert _ROW.match("| `a.B.status` | `a/lifecycle.py` | `b_transition` |")["module"] == "a/lifecycle.py"
