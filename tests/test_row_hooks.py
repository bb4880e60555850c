"""A capability's behaviour is its row's data or its row's hooks, nowhere else.

`forgec.ir.hooks.KINDS` says which rows need a hook of which kind (from their data): the
registry must hold exactly those, once every layer that registers hooks is imported. And no
module compares a capability's name to anything (`capability == "db.query"`, `name in
("a", "b")`, a `match` case): such a line is behaviour a new tool with the same facts would
not get. The rows module and the registrations (`@handles(...)`, `@row_hook(...)`, a
handler module's `CAP = "..."`) are where names are written.
"""

from __future__ import annotations

import ast
from pathlib import Path

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


def _named(node: ast.AST) -> list[str]:
    """The capability names a comparison operand spells: a string, or a tuple/list/set of."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [n for e in node.elts for n in _named(e)]
    return []


def _comparisons(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found.extend((node.lineno, n) for n in _named(operand))
        elif isinstance(node, ast.MatchValue):
            found.extend((node.lineno, n) for n in _named(node.value))
    return found


def test_no_capability_is_a_special_case_outside_its_row() -> None:
    seen: dict[str, list[tuple[int, str]]] = {}
    for path in sorted((ROOT / "forgec").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "forgec/ir/capabilities.py":
            continue
        found = _comparisons(path)
        if found:
            seen[rel] = found
    over = {rel: found for rel, found in seen.items() if len(found) > PENDING.get(rel, 0)}
    assert over == {}, "a capability's behaviour belongs in its row's data or hooks"
    # a pending entry that was moved must leave the list
    assert {rel: len(found) for rel, found in seen.items()} == PENDING


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
