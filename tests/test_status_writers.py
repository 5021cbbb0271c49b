"""One writer per status field (spec D-04, issue 7 item 5): a source scan of the production code of every app
that fails on a status-changing write outside the field's lifecycle module.

The status fields are found by introspection: every `FSMField`, and every choice field named `status` or
`…_status`, of every model of the scanned apps. A write is any of

- `<queryset>.update(<field>=…)` (also `**{"<field>": …}`), `update_or_create(defaults={"<field>": …})`;
- `<obj>.<field> = …` and `setattr(<obj>, "<field>", …)`;
- `bulk_update(…, ["<field>", …])` and `save(update_fields=[…"<field>"…])`;
- raw SQL whose `SET` clause assigns the field.

Row creation with an initial status (`create(status=…)`, `Model(status=…)`, `bulk_create`) is not such a write.
A write is allowed only inside the lifecycle module of its app (`<app>/lifecycle.py` or the package
`<app>/lifecycle/`, or the module named in `LIFECYCLE_MODULES`), and in the kernel's runner
(`owlat/lifecycle.py`), which every lifecycle module calls. Fields listed in `EXEMPT` are written elsewhere
until a later issue gives them a lifecycle.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.apps import apps
from django.db import models
from django_fsm import FSMField

BASE_DIR = Path(__file__).resolve().parent.parent
APPS = ("owlat", "templates", "delivery", "automations", "campaigns", "inbox")

#: "app.Model.field" → why it may be written outside a lifecycle module (the issue that will change that).
EXEMPT = {
    "owlat.OrganizationSettings.abuse_status": "deliverability issue: abuse review gets a lifecycle",
    "owlat.WebhookDelivery.status": "reliability issue: webhook deliveries get a lifecycle",
}
#: "app.Model.field" → its lifecycle module when it is not `<app>/lifecycle.py` / `<app>/lifecycle/`.
LIFECYCLE_MODULES = {
    "owlat.Contact.doi_status": "owlat/topics.py",  # the DOI lifecycle (DOM-08)
    "owlat.Domain.status": "owlat/domains/lifecycle.py",  # domain verification (DOM-12, DOM-20)
    "owlat.Invitation.status": "owlat/invitations.py",  # membership by invitation (DOM-02)
}
KERNEL_RUNNER = "owlat/lifecycle.py"


@dataclass(frozen=True)
class StatusField:
    app: str
    model: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.app}.{self.model}.{self.name}"


def status_fields() -> list[StatusField]:
    found = []
    for label in APPS:
        try:
            config = apps.get_app_config(label)
        except LookupError:  # an app that is not installed yet
            continue
        for model in config.get_models():
            for field in model._meta.concrete_fields:
                named = field.name == "status" or field.name.endswith("_status")
                if isinstance(field, FSMField) or (
                    named and isinstance(field, models.CharField) and field.choices
                ):
                    found.append(StatusField(label, model.__name__, field.name))
    return found


def _installed() -> set[str]:
    return {c.label for c in apps.get_app_configs()}


def production_files(app: str) -> list[Path]:
    root = BASE_DIR / app
    return sorted(
        p
        for p in root.rglob("*.py")
        if not ({"tests", "migrations"} & set(p.relative_to(root).parts[:-1]))
        and not p.name.startswith(("test_", "conftest"))
    )


def in_lifecycle_module(rel: str, field: StatusField) -> bool:
    if field.key in LIFECYCLE_MODULES:
        return rel == LIFECYCLE_MODULES[field.key]
    return rel == f"{field.app}/lifecycle.py" or rel.startswith(f"{field.app}/lifecycle/")


# --- finding writes -----------------------------------------------------------------------------------------

_SQL_SET = re.compile(r"\bUPDATE\b.*?\bSET\b(?P<set>.*?)(?:\bWHERE\b|\bFROM\b|\bRETURNING\b|$)", re.I | re.S)


@dataclass(frozen=True)
class Write:
    path: str
    line: int
    field: str
    kind: str
    receiver: str | None  # the name at the root of the receiver chain (a model class name, or a variable)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} of {self.field!r}"


def _root_name(node: ast.AST) -> str | None:
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _string_items(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def _dict_keys(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _Scope:
    """Which model a local name holds, from `x = Model.objects…` / `x, _ = Model.objects.get_or_create(…)`
    in the same function, or from a name that is a model's snake_case name (`domain` → `Domain`)."""

    def __init__(self, models_by_name: dict[str, str], cls: str | None) -> None:
        self.models_by_name = models_by_name
        self.cls = cls
        self.bound: dict[str, str] = {}

    def bind(self, node: ast.Assign) -> None:
        root = _root_name(node.value)
        if root not in self.models_by_name.values():
            return
        for target in node.targets:
            first = target.elts[0] if isinstance(target, ast.Tuple | ast.List) and target.elts else target
            if isinstance(first, ast.Name):
                self.bound[first.id] = root

    def resolve(self, receiver: ast.AST | None) -> str | None:
        root = _root_name(receiver) if receiver is not None else None
        if root is None:
            return None
        if root == "self" and self.cls is not None:
            return self.cls
        if root in self.models_by_name.values():
            return root
        return self.bound.get(root) or self.models_by_name.get(root) or root


def find_writes(source: str, rel: str, names: set[str], model_names: set[str] = frozenset()) -> list[Write]:
    tree = ast.parse(source)
    writes: list[Write] = []
    models_by_name = {_snake(m): m for m in model_names}

    def add(node: ast.AST, field: str, kind: str, receiver: ast.AST | None, scope: _Scope) -> None:
        if field in names:
            writes.append(Write(rel, node.lineno, field, kind, scope.resolve(receiver)))

    def visit(node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.ClassDef):
            inner = _Scope(models_by_name, node.name)
            for child in node.body:
                visit(child, inner)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = _Scope(models_by_name, scope.cls)
            inner.bound.update(scope.bound)
            for child in node.body:
                visit(child, inner)
            return
        if isinstance(node, ast.Assign):
            scope.bind(node)
        inspect(node, scope)
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    def inspect(node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.Call):
            func = node.func
            attr = func.attr if isinstance(func, ast.Attribute) else None
            receiver = func.value if isinstance(func, ast.Attribute) else None
            if attr == "update":
                for kw in node.keywords:
                    if kw.arg is not None:
                        add(node, kw.arg, ".update()", receiver, scope)
                    else:
                        for key in _dict_keys(kw.value):
                            add(node, key, ".update(**{…})", receiver, scope)
            elif attr == "update_or_create":
                for kw in node.keywords:
                    if kw.arg in ("defaults", "create_defaults"):
                        for key in _dict_keys(kw.value):
                            add(node, key, "update_or_create(defaults=…)", receiver, scope)
            elif attr == "bulk_update":
                fields = node.args[1] if len(node.args) > 1 else None
                fields = next((kw.value for kw in node.keywords if kw.arg == "fields"), fields)
                for name in _string_items(fields):
                    add(node, name, "bulk_update()", receiver, scope)
            elif attr == "save":
                for kw in node.keywords:
                    if kw.arg == "update_fields":
                        for name in _string_items(kw.value):
                            add(node, name, "save(update_fields=…)", receiver, scope)
            elif isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) >= 2:
                for name in _string_items(node.args[1]):
                    add(node, name, "setattr()", node.args[0], scope)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple | ast.List) else [target]:
                    if isinstance(t, ast.Attribute):
                        add(node, t.attr, "attribute assignment", t.value, scope)

    visit(tree, _Scope(models_by_name, None))

    nested_strings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            nested_strings.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if id(node) in nested_strings:
            continue
        text = _text(node)
        if text is None:
            continue
        for match in _SQL_SET.finditer(text):
            for name in names:
                if re.search(rf'(?:^|[\s,."]){re.escape(name)}"?\s*=', match.group("set")):
                    writes.append(Write(rel, node.lineno, name, "raw SQL SET", None))
    return writes


def violations() -> list[str]:
    fields = status_fields()
    by_name: dict[str, list[StatusField]] = {}
    for f in fields:
        by_name.setdefault(f.name, []).append(f)
    model_names = {f.model for f in fields}
    all_models = {
        m.__name__ for label in APPS if label in _installed() for m in apps.get_app_config(label).get_models()
    }
    found = []
    for app in APPS:
        for path in production_files(app):
            rel = path.relative_to(BASE_DIR).as_posix()
            if rel == KERNEL_RUNNER or rel.startswith(KERNEL_RUNNER.removesuffix(".py") + "/"):
                continue  # the kernel's runner (a module or a package) is what every lifecycle module calls
            for write in find_writes(path.read_text(), rel, set(by_name), model_names):
                candidates = by_name[write.field]
                if write.receiver in all_models:  # the receiver is known to be a model (or a row of it)
                    candidates = [f for f in candidates if f.model == write.receiver]
                    if not candidates:
                        continue  # a model without such a status field (e.g. an HTTP status attribute)
                elif write.receiver == "self" or (write.receiver and write.receiver[:1].isupper()):
                    continue  # `self.status` in a class that is not a model; a class name that is not a model
                if all(f.key in EXEMPT for f in candidates):
                    continue
                # otherwise the write must sit in the lifecycle module of a field of that name of its own app
                if any(f.app == app and in_lifecycle_module(rel, f) for f in candidates):
                    continue
                found.append(f"{write} ({', '.join(f.key for f in candidates)})")
    return found


# --- tests ----------------------------------------------------------------------------------------------------


def test_status_fields_are_found_by_introspection():
    keys = {f.key for f in status_fields()}
    assert {
        "automations.Automation.status",
        "automations.AutomationRun.status",
        "automations.AutomationStepRun.status",
        "delivery.EmailSend.status",
        "delivery.TransactionalSend.status",
        "templates.EmailTemplate.status",
        "owlat.Contact.doi_status",
    } <= keys
    assert set(EXEMPT) <= keys  # an exemption names a real field
    assert "owlat.IdempotencyRecord.response_status" not in keys  # an HTTP status code, not a lifecycle


def test_no_status_is_written_outside_its_lifecycle_module():
    found = violations()
    assert not found, "status writes outside their lifecycle module (spec D-04):\n" + "\n".join(found)


SAMPLE = """
from django.db import connection

def bad(obj, qs, send):
    qs.filter(pk=1).update(status="sent")
    qs.update(**{"status": "sent"})
    obj.status = "done"
    setattr(obj, "status", "done")
    Model.objects.bulk_update([obj], ["status", "sent_at"])
    obj.save(update_fields=["status"])
    Thing.objects.update_or_create(pk=1, defaults={"status": "x"})
    connection.cursor().execute(f"UPDATE {table} SET sent_at = %s, status = 'sent' WHERE id = %s")
    connection.cursor().execute("UPDATE t SET \\"status\\" = %s")

def fine(obj, qs):
    Model.objects.create(status="queued")
    Model(status="queued")
    qs.filter(status="queued").update(claimed_at=None)
    obj.save(update_fields=["claimed_at"])
    connection.cursor().execute("UPDATE t SET claimed_at = %s WHERE status = 'queued'")
    obj.other = obj.status
"""


def test_the_scanner_sees_every_kind_of_write():
    writes = find_writes(SAMPLE, "x/services.py", {"status"})
    assert sorted((w.line, w.kind) for w in writes) == [
        (5, ".update()"),
        (6, ".update(**{…})"),
        (7, "attribute assignment"),
        (8, "setattr()"),
        (9, "bulk_update()"),
        (10, "save(update_fields=…)"),
        (11, "update_or_create(defaults=…)"),
        (12, "raw SQL SET"),
        (13, "raw SQL SET"),
    ]
    assert [w.receiver for w in writes if w.line in (5, 9)] == ["qs", "Model"]


@pytest.mark.parametrize(
    ("rel", "field", "allowed"),
    [
        ("campaigns/lifecycle.py", "campaigns.Campaign.status", True),
        ("campaigns/lifecycle/send.py", "campaigns.Campaign.status", True),
        ("campaigns/services.py", "campaigns.Campaign.status", False),
        ("campaigns/orchestrator/send.py", "campaigns.Campaign.status", False),
        ("inbox/lifecycle/processing.py", "inbox.InboundMessage.processing_status", True),
        ("inbox/walker.py", "inbox.InboundMessage.processing_status", False),
        ("delivery/lifecycle/batch.py", "delivery.EmailSend.status", True),
        ("delivery/worker.py", "delivery.EmailSend.status", False),
        ("owlat/topics.py", "owlat.Contact.doi_status", True),
        ("owlat/lifecycle.py", "owlat.Contact.doi_status", False),
    ],
)
def test_the_lifecycle_module_rule_covers_packages_and_future_apps(rel, field, allowed):
    """Campaigns and inbox (whose models are being written now) follow the same rule; lifecycle packages count."""
    assert in_lifecycle_module(rel, StatusField(*field.split("."))) is allowed
    assert {"campaigns", "inbox"} <= set(APPS)
