"""Lowering: the opcode table, the shape of lowered code, the named invariants, determinism,
the Program's JSON form, and disassembly snapshots of every example."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import EXAMPLES, example
from reference_interp import lower_dict, manifest
from strategies import json_values, scalars

from forgec.backend import INVARIANTS, OPS, LoweringError, Op, OperandKind, disassemble
from forgec.backend.invariants import (
    every_path_terminates,
    forward_jumps_only_except_loop_back_edges,
    jumps_in_range,
    stack_depth_consistent,
)
from forgec.runtime import Program, ProgramError


def ops_of(program: Program) -> str:
    """Disassembly one-liner: `enter; eval; store; ...` (starlark codegen_test style)."""
    return "; ".join(OPS[Op(op)].name for op, _arg, _node in program.code)


def test_every_op_has_one_row_and_a_disassembly_name() -> None:
    assert set(OPS) == set(Op)
    names = [info.name for info in OPS.values()]
    assert len(set(names)) == len(names)
    for op, info in OPS.items():
        assert info.op is op and info.name == op.name.lower()
        assert isinstance(info.operand, OperandKind)
        assert info.falls_through or info.op in (Op.RETURN, Op.FAIL, Op.JUMP)
        assert (info.jump_effect is not None) == (info.operand is OperandKind.LABEL)


def test_invariant_table_names_the_four_invariants() -> None:
    assert [name for name, _ in INVARIANTS] == [
        "jumps_in_range",
        "forward_jumps_only_except_loop_back_edges",
        "stack_depth_consistent",
        "every_path_terminates",
    ]


def test_set_then_return_is_straight_line_code() -> None:
    m = manifest(
        [
            {"id": "a", "type": "set", "target": "x", "value": 1, "next": "r"},
            {"id": "r", "type": "return", "value": {"$ref": "x"}},
        ]
    )
    assert ops_of(lower_dict(m)) == "enter; eval; store; enter; eval; return"


def test_if_lays_then_out_next_and_jumps_to_else() -> None:
    m = manifest(
        [
            {
                "id": "c",
                "type": "if",
                "condition": {"op": "truthy", "left": {"$ref": "input.x"}},
                "then": "t",
                "else": "f",
            },
            {"id": "f", "type": "fail", "code": "NO_X", "message": "no x"},
            {"id": "t", "type": "return", "value": 1},
        ]
    )
    program = lower_dict(m)
    assert ops_of(program) == "enter; compare; jump_if_false; enter; eval; return; enter; fail"
    assert program.code[2][1] == 6  # jump_if_false → the else block
    listing = disassemble(program)
    assert "   1  compare        truthy $input.x" in listing
    assert '   7  fail           NO_X "no x"' in listing


def test_a_capability_without_target_pops_its_result() -> None:
    m = manifest(
        [
            {
                "id": "c",
                "type": "capability",
                "capability": "tasks.list",
                "input": {},
                "next": "r",
                "retry": {"attempts": 2, "backoffMs": 10},
            },
            {"id": "r", "type": "return", "value": None},
        ]
    )
    program = lower_dict(m)
    assert ops_of(program) == "enter; eval; call; pop; enter; eval; return"
    assert "call           tasks.list retry=2x10ms" in disassemble(program)


def loop_manifest() -> dict[str, Any]:
    return manifest(
        [
            {
                "id": "loop",
                "type": "foreach",
                "source": {"$ref": "input.items"},
                "itemVar": "it",
                "indexVar": "i",
                "maxItems": 3,
                "body": [
                    {
                        "id": "b1",
                        "type": "if",
                        "condition": {"op": "gt", "left": {"$ref": "i"}, "right": 1},
                        "then": "b2",
                        "else": "b3",
                    },
                    {"id": "b2", "type": "set", "target": "x", "value": {"$ref": "it"}},
                    {"id": "b3", "type": "set", "target": "y", "value": {"$ref": "it"}},
                ],
                "next": "r",
            },
            {"id": "r", "type": "return", "value": 1},
        ]
    )


def test_foreach_has_one_back_edge_per_body_exit_and_all_else_forward() -> None:
    program = lower_dict(loop_manifest())
    assert ops_of(program) == (
        "enter; eval; foreach_init; foreach_next; enter; compare; jump_if_false; "
        "enter; eval; store; jump; enter; eval; store; jump; enter; eval; return"
    )
    backs = [
        (pc, arg) for pc, (op, arg, _n) in enumerate(program.code) if op == Op.JUMP and arg <= pc
    ]
    assert backs == [(10, 3), (14, 3)]
    assert program.code[3][1] == 15  # loop exit → the next node
    for _name, check in INVARIANTS:
        assert check(program.code) == []


def test_nodes_table_and_ops_carry_the_source_node() -> None:
    program = lower_dict(loop_manifest())
    ids = [program.nodes[n]["id"] for _op, _arg, n in program.code]
    assert ids[:4] == ["loop"] * 4 and ids[-3:] == ["r"] * 3
    assert program.nodes[0] == {
        "id": "loop",
        "type": "foreach",
        "pointer": "/flow/nodes/0",
        "line": None,
    }


def test_same_manifest_same_bytes_and_json_round_trip() -> None:
    a = lower_dict(loop_manifest()).to_bytes()
    b = lower_dict(loop_manifest()).to_bytes()
    assert a == b
    assert Program.from_json(a).to_bytes() == a
    assert Program.from_json(orjson.loads(a)).to_bytes() == a


def test_pools_intern_each_distinct_value_once_keeping_types_apart() -> None:
    m = manifest(
        [
            {"id": "a", "type": "set", "target": "x", "value": 1, "next": "b"},
            {"id": "b", "type": "set", "target": "y", "value": 1, "next": "c"},
            {"id": "c", "type": "set", "target": "z", "value": 1.0, "next": "d"},
            {"id": "d", "type": "set", "target": "w", "value": True, "next": "r"},
            {"id": "r", "type": "return", "value": [{"$ref": "x"}, {"$ref": "x"}]},
        ]
    )
    program = lower_dict(m)
    assert program.consts == [1, 1.0, True]
    assert [p for p in program.paths if p == ["x"]] == [["x"]]


# --- the invariants catch broken code ---------------------------------------------------------


def test_each_invariant_catches_its_breakage() -> None:
    e, v, ret, j = int(Op.ENTER), int(Op.EVAL), int(Op.RETURN), int(Op.JUMP)
    assert jumps_in_range([[j, 9, 0]]) != []
    assert forward_jumps_only_except_loop_back_edges([[e, 0, 0], [j, 0, 0]]) != []
    assert stack_depth_consistent([[ret, 0, 0]]) != []  # pops an empty stack
    assert stack_depth_consistent([[v, 0, 0]]) != []  # falls off the end
    pushes_in_branch = [
        [int(Op.COMPARE), 0, 0],
        [int(Op.JUMP_IF_FALSE), 3, 0],
        [v, 0, 0],
        [v, 0, 0],
        [ret, 0, 0],
    ]
    assert "reached with stack depth" in stack_depth_consistent(pushes_in_branch)[0]
    assert every_path_terminates([[e, 0, 0], [j, 0, 0]]) != []
    assert every_path_terminates([[v, 0, 0], [ret, 0, 0]]) == []


def test_lowering_refuses_an_unchecked_ir() -> None:
    m = manifest([{"id": "a", "type": "set", "target": "x", "value": 1, "next": "nowhere"}])
    with pytest.raises(LoweringError, match="leads nowhere"):
        lower_dict(m)
    m = manifest([{"id": "a", "type": "set", "target": "x", "value": 1}])
    with pytest.raises(LoweringError, match="has no next"):
        lower_dict(m)


# --- Program.from_json is a boundary --------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda d: d.update(format="x"), "format"),
        (lambda d: d.pop("code"), "missing field"),
        (lambda d: d["code"].append([99, 0, 0]), "unknown op"),
        (lambda d: d["code"].__setitem__(0, [1, 0, 7]), "node 7 is out of range"),
        (lambda d: d["code"].__setitem__(3, [int(Op.FOREACH_NEXT), 1, 0]), "jumps backwards"),
        (lambda d: d["code"].pop(), "falls off"),
        (lambda d: d.update(maxTransitions=1000), "maxTransitions"),
        (lambda d: d["values"].append(["eval", "x"]), "value descriptor"),
        (lambda d: d.update(inputSchema={"$ref": "#"}), "unsupported keyword"),
        (lambda d: d["loops"][0].update(maxItems=1000), r"loops\[0\] is malformed"),
    ],
)
def test_malformed_programs_are_refused_with_a_reason(mutate: Any, words: str) -> None:
    data = lower_dict(loop_manifest()).to_json()
    data = copy.deepcopy(data)
    mutate(data)
    with pytest.raises(ProgramError, match=words):
        Program.from_json(data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_mutation_of_a_program_is_a_program_or_a_program_error(data: st.DataObject) -> None:
    base = orjson.loads(lower_dict(loop_manifest()).to_bytes())
    code = base["code"]
    pc = data.draw(st.integers(0, len(code) - 1))
    slot = data.draw(st.integers(0, 2))
    code[pc][slot] = data.draw(st.integers(-2, 40))
    try:
        program = Program.from_json(base)
    except ProgramError:
        return
    from forgec.runtime import run
    from forgec.runtime.memory_host import MemoryHost

    result = run(program, {"items": [1, 2, 3]}, host=MemoryHost(), consent=lambda r: True)
    assert result.status in ("ok", "failed") and result.transitions <= 256


# --- examples --------------------------------------------------------------------------------------


def example_paths() -> list[Path]:
    return sorted([*EXAMPLES.glob("*.talostool"), *EXAMPLES.glob("*.forge")])


def target_of(path: Path) -> str:
    return "talon" if path.name.startswith("talon-") else "talos"


def _check(path: Path) -> Any:
    import forgec

    return forgec.check_file(path, target=target_of(path))


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.name)
def test_example_disassembly(path: Path, snapshot: Any) -> None:
    report = _check(path)
    assert report.ok, [d.code for d in report.errors]
    from forgec.backend import lower_report

    program = lower_report(report)
    for _name, check in INVARIANTS:
        assert check(program.code) == []
    assert Program.from_json(program.to_bytes()).to_bytes() == program.to_bytes()
    assert all(isinstance(n["line"], int) for n in program.nodes)
    assert disassemble(program) == snapshot


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.forge")), ids=lambda p: p.stem)
def test_both_forms_of_an_example_lower_to_the_same_program(path: Path) -> None:
    from forgec.backend import lower_report

    def without_lines(program: Program) -> dict[str, Any]:
        data = program.to_json()
        data["nodes"] = [{**n, "line": None} for n in data["nodes"]]
        return data

    dsl = lower_report(_check(path))
    manifest = lower_report(_check(path.with_suffix(".talostool")))
    assert without_lines(dsl) == without_lines(manifest)


def test_api_lower_returns_a_runnable_program() -> None:
    import forgec

    tool = example("weekly-review")
    program = forgec.lower(tool)
    assert isinstance(program, Program) and program.id == "weekly-review"
    with pytest.raises(forgec.CheckError):
        forgec.lower({**tool, "version": 0})


any_json = json_values(
    scalars(integers=st.integers(-3, 300), floats=None, text=st.text(max_size=5)),
    keys=st.text(max_size=5),
    max_size=3,
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_field_replaced_is_a_program_or_a_program_error(data: st.DataObject) -> None:
    """Whatever a stored Program holds, loading it refuses or running it gives a result."""
    from forgec.runtime import run
    from forgec.runtime.memory_host import MemoryHost

    base = orjson.loads(lower_dict(loop_manifest()).to_bytes())
    base["ui"] = {"title": "t", "values": [{"label": "x", "path": "x", "segments": ["x"]}]}
    key = data.draw(st.sampled_from(sorted(base)))
    target: Any = base
    if isinstance(base[key], (list, dict)) and base[key] and data.draw(st.booleans()):
        target = base[key]
        key = data.draw(
            st.sampled_from(
                list(range(len(target))) if isinstance(target, list) else sorted(target)
            )
        )
    target[key] = data.draw(any_json)
    try:
        program = Program.from_json(base)
    except ProgramError:
        return
    result = run(program, {"items": [1, 2]}, host=MemoryHost(), consent=lambda r: True)
    assert result.status in ("ok", "failed")
    disassemble(program)
