"""A capability's behaviour is its row's data or its row's hooks, nowhere else.

`forgec.ir.hooks.KINDS` says which rows need a hook of which kind (from their data): the
registry must hold exactly those, once every layer that registers hooks is imported. And no
module compares a capability's name to anything (`capability == "db.query"`, `name in
("a", "b")`, a `match` case): such a line is behaviour a new tool with the same facts would
not get. The rows module and the registrations (`@handles(...)`, `@row_hook(...)`, a
handler module's `CAP = "..."`) are where names are written.

A name spelt through a constant is the same special case: an operand that is a name or an
attribute (`HTTP`, `fl.HTTP`, `sources_and_sinks.HTTP`, `CAP`) which, once every forgec
module is imported, resolves through the module's globals (and the modules and classes they
hold) to a capability's name — or to a collection some module binds to a literal of names —
counts as that name. Not seen: a name reached through an instance (`self.CAP`) or a local
variable; those are the limit of a static reading.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from forgec.ir.capabilities import ROWS

ROOT = Path(__file__).resolve().parent.parent
NAMES = frozenset(row.name for row in ROWS)

# Comparisons still written outside the hooks, each with who is moving it and why it stays
# until then. Shrink this list; never grow it.
PENDING: dict[str, int] = {}


def test_every_row_has_the_hooks_its_data_calls_for_and_no_other() -> None:
    import forgec.host.bridge  # imports every module of forgec.host
    import forgec.runtime.undo  # noqa: F401
    from forgec.ir.hooks import HOOKS, KINDS, needed

    for kind in KINDS:
        assert set(HOOKS[kind]) == {row.name for row in ROWS if kind in needed(row)}, kind


def test_a_hook_for_a_row_that_does_not_call_for_one_is_refused() -> None:
    from forgec.ir.hooks import row_hook

    with pytest.raises(ValueError, match="does not call for"):
        row_hook("undo", "tasks.list")(lambda call, result: None)
    with pytest.raises(ValueError, match="no row"):
        row_hook("undo_input", "tasks.nosuch")(lambda result: None)
    with pytest.raises(ValueError, match="no hook kind"):
        row_hook("undo_later", "tasks.create")


Scope = Mapping[str, Any]
_NO_SCOPE: Scope = {}


def _resolve(node: ast.AST, scope: Scope) -> Any:
    """What a name or dotted attribute denotes through a module's globals (only through
    modules and classes: no property runs), or `_NOTHING`."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in scope:
        return _NOTHING
    value = scope[node.id]
    for part in reversed(parts):
        if not isinstance(value, types.ModuleType | type):
            return _NOTHING
        value = vars(value).get(part, _NOTHING)
    return value


_NOTHING = object()


def _named(
    node: ast.AST, scope: Scope = _NO_SCOPE, literal: frozenset[int] = frozenset()
) -> list[str]:
    """The capability names a comparison operand spells: a string, a name or attribute bound
    to one (or to a collection a module binds to a literal of names), or a tuple/list/set of."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [n for e in node.elts for n in _named(e, scope, literal)]
    if isinstance(node, ast.Name | ast.Attribute):
        value = _resolve(node, scope)
        if isinstance(value, str) and value in NAMES:
            return [value]
        if id(value) in literal:
            return sorted(n for n in value if n in NAMES)
    return []


def _comparisons(
    path: Path, scope: Scope = _NO_SCOPE, literal: frozenset[int] = frozenset()
) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found.extend((node.lineno, n) for n in _named(operand, scope, literal))
        elif isinstance(node, ast.MatchValue):
            found.extend((node.lineno, n) for n in _named(node.value, scope, literal))
    return found


def _literal_bindings(path: Path, scope: Scope) -> list[Any]:
    """The values of a module's top-level names bound to a literal collection of capability
    names (`SPECIAL = ("db.query", "net.http")`): comparing to one is comparing to names."""
    out = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Call) and value.args:  # frozenset({...}), tuple([...])
                value = value.args[0]
            if isinstance(value, ast.Tuple | ast.List | ast.Set | ast.Dict):
                elts = value.keys if isinstance(value, ast.Dict) else value.elts
                if any(_named(e) for e in elts if e is not None):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    out.extend(
                        scope[t.id] for t in targets if isinstance(t, ast.Name) and t.id in scope
                    )
    return out


def _modules() -> dict[str, Scope]:
    """Every forgec module, imported: its file (relative) → its globals. A module that does
    not import fails the scan (a module it cannot see is a module it does not check)."""
    import forgec

    out: dict[str, Scope] = {}
    failed = []
    for info in pkgutil.walk_packages(forgec.__path__, "forgec."):
        if info.name.endswith(".__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError as exc:
            failed.append(f"{info.name}: {exc}")
            continue
        file = getattr(module, "__file__", None)
        if file is not None:
            out[Path(file).resolve().relative_to(ROOT).as_posix()] = vars(module)
    assert not failed, failed
    return out


def test_no_capability_is_a_special_case_outside_its_row() -> None:
    scopes = _modules()
    paths = sorted((ROOT / "forgec").rglob("*.py"))
    literal = frozenset(
        id(v) for path in paths for v in _literal_bindings(path, scopes.get(_rel(path), {}))
    )
    seen: dict[str, list[tuple[int, str]]] = {}
    for path in paths:
        rel = _rel(path)
        if rel == "forgec/ir/capabilities.py":
            continue
        found = _comparisons(path, scopes.get(rel, _NO_SCOPE), literal)
        if found:
            seen[rel] = found
    over = {rel: found for rel, found in seen.items() if len(found) > PENDING.get(rel, 0)}
    assert over == {}, "a capability's behaviour belongs in its row's data or hooks"
    # a pending entry that was moved must leave the list
    assert {rel: len(found) for rel, found in seen.items()} == PENDING


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_scan_sees_a_special_case(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        'if capability == "db.query":\n    pass\n'
        'if name in ("tasks.create", "notes.update"):\n    pass\n'
        'match name:\n    case "net.http":\n        pass\n'
    )
    assert sorted(n for _, n in _comparisons(probe)) == [
        "db.query", "net.http", "notes.update", "tasks.create"
    ]  # fmt: skip


def test_the_scan_sees_a_special_case_through_a_constant(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "if capability == CAP:\n    pass\n"  # 1
        "if name != fl.WEB:\n    pass\n"  # 3
        "if name in (forgec.runtime.fl.WEB, 'x'):\n    pass\n"  # 5
        "if name not in SPECIAL:\n    pass\n"  # 7
        "match name:\n    case fl.WEB:\n        pass\n"  # 10
        "if name in fl.DERIVED:\n    pass\n"  # a table derived from the rows
        "if cap == other:\n    pass\n"  # a name bound to no capability
        "if cap == thing.WEB:\n    pass\n"  # through an instance: not resolved
        "register(CAP)\n"  # a registration is no comparison
    )
    special = ("db.query", "tasks.create")
    fl = types.ModuleType("fl")
    vars(fl).update(WEB="net.http", DERIVED=frozenset(NAMES))
    forgec = types.ModuleType("forgec")
    vars(forgec).update(runtime=types.ModuleType("runtime"))
    vars(forgec.runtime).update(fl=fl)
    scope = {
        "CAP": "notes.update",
        "fl": fl,
        "forgec": forgec,
        "SPECIAL": special,
        "other": "not a capability",
        "thing": types.SimpleNamespace(WEB="net.http"),
    }
    assert sorted(_comparisons(probe, scope, frozenset({id(special)}))) == [
        (1, "notes.update"),
        (3, "net.http"),
        (5, "net.http"),
        (7, "db.query"),
        (7, "tasks.create"),
        (10, "net.http"),
    ]
    # a literal collection is found from the module's own text; a derived one is not
    module = tmp_path / "mod.py"
    module.write_text(
        'SPECIAL = ("db.query", "tasks.create")\nDERIVED = frozenset(x for x in NAMES)\n'
    )
    assert _literal_bindings(module, {"SPECIAL": special, "DERIVED": frozenset()}) == [special]
