"""The layers hold.

Statically: every import of every module (read with `ast`, nothing executed; imports inside
functions and under `TYPE_CHECKING` count) is an edge the layer table in
`docs/architecture.md` allows. The table is parsed from the doc, so the doc and the test cannot
drift apart. Dynamically (starlark `TestDeps`): importing the runtime pulls in no compiler
module, and a Program stored as JSON runs with `forgec.runtime` alone, in a fresh interpreter.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from reference_interp import lower_dict, manifest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "forgec"
DOC = ROOT / "docs" / "architecture.md"
FORBIDDEN = ("lark", "forgec.frontend", "forgec.passes", "forgec.backend", "forgec.catalog")


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_importing_the_runtime_imports_no_compiler() -> None:
    done = fresh(
        f"""
        import sys
        import forgec.runtime, forgec.runtime.memory_host
        bad = sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))
        assert not bad, bad
        """
    )
    assert done.returncode == 0, done.stderr


def test_a_program_from_json_runs_with_the_runtime_alone(tmp_path: Path) -> None:
    m = manifest(
        [
            {
                "id": "mk",
                "type": "capability",
                "capability": "tasks.create",
                "input": {"title": {"$template": "Call {{input.who}}"}},
                "target": "task",
                "next": "r",
            },
            {"id": "r", "type": "return", "value": {"title": {"$ref": "task.title"}}},
        ]
    )
    stored = tmp_path / "tool.program.json"
    stored.write_bytes(lower_dict(m).to_bytes())
    done = fresh(
        f"""
        import sys, json
        from forgec.runtime import Program, run
        from forgec.runtime.memory_host import MemoryHost
        program = Program.from_json(open({str(stored)!r}, "rb").read())
        result = run(program, {{"who": "Ada"}}, host=MemoryHost(), consent=lambda r: True)
        print(json.dumps(result.to_json()["output"]))
        bad = sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))
        assert not bad, bad
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"title": "Call Ada"}'


# --- the static layer check -------------------------------------------------------------------


def layer_table() -> dict[str, tuple[int, set[str]]]:
    """unit → (row number, the units it may import), parsed from docs/architecture.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Layers and what may import what", 1)[1].split("\n## ", 1)[0]
    table: dict[str, tuple[int, set[str]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`forgec"):
            continue
        unit = cells[0].strip("`")
        allowed = {_unit_name(name) for name in re.findall(r"`([^`]+)`", cells[2])}
        assert unit not in table, f"{unit} has two rows in the layer table"
        table[unit] = (len(table), allowed)
    assert len(table) > 10, "the layer table in docs/architecture.md was not found"
    return table


def _unit_name(short: str) -> str:
    return short if short.startswith("forgec") else f"forgec.{short}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit_of(module: str) -> str:
    """The table row a module belongs to: `forgec.X` for a subpackage or top-level module."""
    parts = module.split(".")
    return ".".join(parts[:2])


def imports(path: Path, source: str | None = None) -> Iterator[tuple[str, int]]:
    """(imported forgec module, line) for every import statement in the file, at any depth."""
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                names = [".".join([*base, *([node.module] if node.module else [])])]
            else:
                names = [node.module or ""]
            if names[0] == "forgec":
                # `from forgec import api` imports a unit; `from forgec import __version__` the root
                names = [
                    f"forgec.{a.name}"
                    if (PACKAGE / a.name).exists() or (PACKAGE / f"{a.name}.py").exists()
                    else "forgec"
                    for a in node.names
                ]
        else:
            continue
        for name in names:
            if name == "forgec" or name.startswith("forgec."):
                yield name, node.lineno


def import_edges() -> dict[tuple[str, str], list[str]]:
    """(from unit, to unit) → where ("path:line"), for every import between two units."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = unit_of(_module_name(path))
        for target, line in imports(path):
            unit = unit_of(target)
            if unit != source:
                edges.setdefault((source, unit), []).append(
                    f"{path.relative_to(ROOT)}:{line} imports {target}"
                )
    return edges


def test_every_package_and_module_has_a_row() -> None:
    table = layer_table()
    units = {unit_of(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    missing = sorted(units - set(table))
    assert not missing, f"add a row to the layer table in docs/architecture.md for {missing}"
    stale = sorted(set(table) - units)
    assert not stale, f"the layer table names units that do not exist: {stale}"


def test_the_table_is_layered() -> None:
    # each row may import only rows listed before it: then no cycle is possible
    table = layer_table()
    for unit, (row, allowed) in table.items():
        unknown = sorted(allowed - set(table))
        assert not unknown, f"{unit} may import unknown units {unknown}"
        upward = sorted(a for a in allowed if table[a][0] >= row)
        assert not upward, f"{unit} may import {upward}, which are not below it in the table"


def test_every_import_is_allowed_by_the_layer_table() -> None:
    table = layer_table()
    bad = [
        f"{source} → {target}: " + "; ".join(where[:3])
        for (source, target), where in sorted(import_edges().items())
        if source in table and target in table and target not in table[source][1]
    ]
    assert not bad, "imports the layer table forbids:\n" + "\n".join(bad)


def test_every_allowed_edge_is_used() -> None:
    # the table says what a layer needs, not what it might: an edge nobody imports is removed,
    # so the table stays the true, smallest picture of the dependencies
    table = layer_table()
    used = set(import_edges())
    unused = sorted(
        f"{unit} → {target}"
        for unit, (_row, allowed) in table.items()
        for target in allowed
        if (unit, target) not in used
    )
    assert not unused, "allowed in docs/architecture.md but never imported:\n" + "\n".join(unused)


def test_no_cycle_between_packages() -> None:
    # independent of the table: the import graph itself has no cycle (Tarjan's algorithm would
    # name it; a depth-first search that finds a back edge is enough to fail)
    graph: dict[str, set[str]] = {}
    for source, target in import_edges():
        graph.setdefault(source, set()).add(target)
    state: dict[str, int] = {}

    def visit(unit: str, path: list[str]) -> None:
        state[unit] = 1
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt] if nxt in path else [unit, nxt]
                pytest.fail("import cycle: " + " → ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[unit] = 2

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [unit])


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (PACKAGE / "commands").glob("*.py") if p.name != "__init__.py"),
    ids=lambda p: p.stem,
)
def test_command_modules_import_the_library_lazily(path: Path) -> None:
    # module level: the standard library and forgec.commands only (`forgec --help` stays cheap)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    eager = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("forgec"):
            if not node.module.startswith("forgec.commands"):
                eager.append(f"line {node.lineno}: {node.module}")
        elif isinstance(node, ast.Import):
            eager += [
                f"line {node.lineno}: {a.name}"
                for a in node.names
                if "." not in a.name and a.name not in sys.stdlib_module_names
            ]
    assert not eager, f"{path.name} imports at module level: {eager}"


def test_the_reader_sees_hidden_imports() -> None:
    # the reader itself: relative imports inside functions and `from forgec import X` count
    probe = PACKAGE / "runtime" / "probe.py"  # not written: the source is passed in
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from forgec.frontend import build\n"
        "def f():\n    from ..store import core\n    from forgec import api, __version__\n"
    )
    assert list(imports(probe, source)) == [
        ("forgec.frontend", 3),
        ("forgec.store", 5),
        ("forgec.api", 6),
        ("forgec", 6),
    ]
    assert "forgec.store" not in layer_table()["forgec.runtime"][1]
