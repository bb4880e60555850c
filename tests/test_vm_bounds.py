"""Values bounded while they are built, linear comparisons, state and defaults validated
(SPEC §16): the exact 256 KiB boundary of each way to build a value, and what a person sees
when a tool's state or input default breaks its schema — through `forgec.runtime.run` and
through `forgec run` on the reference SQLite host."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_interp import build_ir, lower_dict, manifest

from forgec.cli import main
from forgec.passes.value_size import largest_value_bound
from forgec.runtime import Program, run
from forgec.runtime.memory_host import MemoryHost
from forgec.runtime.values import VALUE_LIMIT, json_equal

LIMIT = 262_144


def yes(_request: Any) -> bool:
    return True


def go(m: dict[str, Any], input: Any = None, h: MemoryHost | None = None) -> Any:
    return run(lower_dict(m), {} if input is None else input, host=h or MemoryHost(), consent=yes)


def setn(nid: str, target: str, value: Any, nxt: str | None) -> dict[str, Any]:
    node = {"id": nid, "type": "set", "target": target, "value": value}
    if nxt:
        node["next"] = nxt
    return node


def ret(value: Any, nid: str = "r") -> dict[str, Any]:
    return {"id": nid, "type": "return", "value": value}


def ref(path: str) -> dict[str, str]:
    return {"$ref": path}


def code_of(result: Any) -> str | None:
    return result.error.code if result.error else None


def built(value: Any) -> Any:
    """Run `set b = value; return $b` with `input.s` a 60,000-character string."""
    return go(manifest([setn("b", "b", value, "r"), ret(ref("b"))]), {"s": "x" * 60_000})


def test_the_limit_is_the_spec_figure() -> None:
    assert VALUE_LIMIT == LIMIT == 256 * 1024


# --- each way of building a value, at its exact boundary ------------------------------------


@pytest.mark.parametrize("pad", [0, 1])
def test_template_boundary_counts_the_json_quotes(pad: int) -> None:
    # four copies of input.s plus padding: the string's JSON is its text and two quotes
    text = "y" * (LIMIT - 2 - 4 * 60_000 + pad)
    result = built({"$template": "{{input.s}}" * 4 + text})
    if pad:
        assert code_of(result) == "RUN_VALUE_TOO_LARGE" and result.error.node == "b"
    else:
        assert result.ok and len(orjson.dumps(result.output)) == LIMIT


@pytest.mark.parametrize("pad", [0, 1])
def test_wide_template_boundary_counted_piece_by_piece(pad: int) -> None:
    # 12 placeholders (past the 8 measured in one pass) of a 20,000-character input
    text = "y" * (LIMIT - 2 - 12 * 20_000 + pad)
    m = manifest([setn("b", "b", {"$template": "{{input.s}}" * 12 + text}, "r"), ret(ref("b"))])
    result = go(m, {"s": "x" * 20_000})
    if pad:
        assert code_of(result) == "RUN_VALUE_TOO_LARGE" and result.error.node == "b"
    else:
        assert result.ok and len(orjson.dumps(result.output)) == LIMIT
    quotes = go(m, {"s": '"' * 20_000})  # same length, twice the JSON
    assert code_of(quotes) == "RUN_VALUE_TOO_LARGE"


@pytest.mark.parametrize("char", ['"', "\n", "é"])
def test_template_counts_escapes_and_utf8_bytes_not_characters(char: str) -> None:
    # 150,000 characters is well under the limit, but each of these is 2 bytes of JSON
    m = manifest([setn("b", "b", {"$template": "{{c}}" * 3}, "r"), ret(ref("b"))])
    m["flow"]["nodes"].insert(0, setn("c0", "c", char * 50_000, "b"))
    m["flow"]["entry"] = "c0"
    result = go(m)
    assert code_of(result) == "RUN_VALUE_TOO_LARGE", result
    assert "262144" in result.error.message


def test_template_of_a_non_string_counts_its_json() -> None:
    grown = [setn("l0", "l", [1], "l1")] + [
        setn(f"l{k}", "l", [ref("l"), ref("l")], f"l{k + 1}") for k in range(1, 16)
    ]
    ok = go(manifest([*grown, setn("l16", "t", {"$template": "{{l}}"}, "r"), ret(ref("t"))]))
    assert ok.ok and len(ok.output) == 196_605
    over = go(manifest([*grown, setn("l16", "t", {"$template": "{{l}}{{l}}"}, "r"), ret(1)]))
    assert code_of(over) == "RUN_VALUE_TOO_LARGE" and over.error.node == "l16"


@pytest.mark.parametrize("width", [4, 12])
@pytest.mark.parametrize("pad", [0, 1])
def test_list_boundary_narrow_and_wide(width: int, pad: int) -> None:
    # `width` copies of input.s (60,002 bytes each when narrow, 20,002 when wide) and a
    # padding string that makes the list exactly the limit, or one byte more
    size = 60_000 if width == 4 else 20_000
    items: list[Any] = [{"$template": "{{s}}"}] * 0 + [ref("t")] * width
    fixed = 2 + width  # brackets and commas (width + 1 members)
    pad_text = "p" * (LIMIT - fixed - width * (size + 2) - 2 + pad)
    m = manifest(
        [
            setn("t0", "t", {"$template": "{{input.s}}"}, "b"),
            setn("b", "b", [*items, pad_text], "r"),
            ret(ref("b")),
        ]
    )
    result = go(m, {"s": "x" * size})
    if pad:
        assert code_of(result) == "RUN_VALUE_TOO_LARGE" and result.error.node == "b"
    else:
        assert result.ok and len(orjson.dumps(result.output)) == LIMIT


@pytest.mark.parametrize("width", [3, 10])
@pytest.mark.parametrize("pad", [0, 1])
def test_object_boundary_counts_keys(width: int, pad: int) -> None:
    members = {f"k{i}": ref("input.s") for i in range(width)}
    size = 20_000
    fixed = 1 + (width + 1) + sum(len(f'"k{i}":') for i in range(width)) + len('"pad":')
    members["pad"] = "p" * (LIMIT - fixed - width * (size + 2) - 2 + pad)
    result = go(manifest([setn("b", "b", members, "r"), ret(ref("b"))]), {"s": "x" * size})
    if pad:
        assert code_of(result) == "RUN_VALUE_TOO_LARGE"
    else:
        assert result.ok and len(orjson.dumps(result.output)) == LIMIT


def test_a_loop_accumulating_is_refused_at_the_iteration_that_passes_the_limit() -> None:
    body = [setn("acc", "v", {"$template": "{{v}}{{input.s}}"}, None)]
    loop = {
        "id": "each",
        "type": "foreach",
        "source": list(range(10)),
        "itemVar": "it",
        "indexVar": "i",
        "maxItems": 10,
        "body": body,
        "next": "r",
    }
    m = manifest([setn("v0", "v", "", "each"), loop, ret(ref("i"))])
    result = go(m, {"s": "x" * 60_000})
    # 4 × 60,000 fits, the fifth append is refused
    assert code_of(result) == "RUN_VALUE_TOO_LARGE" and result.error.node == "acc"
    assert result.transitions == 2 + 5


def test_nesting_past_what_json_can_write_is_refused_at_the_node_that_builds_it() -> None:
    # each iteration wraps the accumulator in 4 more lists: small, but 256 levels deep by
    # the 64th, where no JSON writer (orjson stops at 254) could return it
    loop = {
        "id": "each",
        "type": "foreach",
        "source": list(range(100)),
        "itemVar": "it",
        "maxItems": 100,
        "body": [setn("wrap", "acc", [[[[ref("acc")]]]], None)],
        "next": "r",
    }
    result = go(manifest([setn("a0", "acc", [], "each"), loop, ret(ref("acc"))]))
    assert code_of(result) == "RUN_VALUE_TOO_LARGE" and result.error.node == "wrap"
    assert "nested more than 254 levels" in result.error.message


def test_a_hand_made_program_constant_over_the_limit_is_refused_not_run() -> None:
    m = manifest([ret({"s": "x" * LIMIT})])
    assert code_of(go(m)) == "RUN_VALUE_TOO_LARGE"
    data = lower_dict(manifest([ret("small")])).to_json()
    data["consts"] = ["x" * LIMIT]
    program = Program.from_json(orjson.dumps(data))
    assert code_of(run(program, {}, host=MemoryHost(), consent=yes)) == "RUN_VALUE_TOO_LARGE"


def test_the_output_limit_still_holds_for_the_whole_state() -> None:
    # each field is a value within the limit, the state object holding both is not
    state = {"fields": {"a": {"type": "string"}, "b": {"type": "string"}}, "maxBytes": 65_536}
    m = manifest(
        [
            setn("a", "state.a", {"$template": "{{input.s}}{{input.s}}{{input.s}}"}, "b"),
            setn("b", "state.b", {"$template": "{{input.s}}{{input.s}}{{input.s}}"}, "r"),
            ret(ref("state")),
        ],
        state=state,
    )
    assert code_of(go(m, {"s": "x" * 60_000})) == "RUN_OUTPUT_TOO_LARGE"


def test_results_over_the_limit_keep_their_own_code() -> None:
    h = MemoryHost()
    h.script_model("x" * LIMIT)
    m = manifest(
        [
            {"id": "m", "type": "llm", "op": "generate", "input": "hi", "target": "a", "next": "r"},
            ret(ref("a")),
        ]
    )
    assert code_of(go(m, h=h)) == "RUN_RESULT_TOO_LARGE"


# --- comparisons are linear in their operands ------------------------------------------------


def _doubled(steps: int) -> Any:
    v: Any = [1]
    for _ in range(steps):
        v = [v, v]
    return v


def test_eq_on_shared_structures_is_linear_and_right() -> None:
    a, b = _doubled(40), _doubled(40)  # 2^40 leaves if walked naively
    started = time.monotonic()
    assert json_equal(a, a) and json_equal([a, 1], [a, 1.0])
    assert not json_equal([a, True], [a, 1])
    assert json_equal(a, b)  # built apart: each pair of containers is compared once
    b[1] = [b[1][0], [[2]]]
    assert not json_equal(a, b)
    # a budget that holds on a loaded 2-core machine; the naive walk is 2^40 steps, never done
    assert time.monotonic() - started < 2.0
    # structurally equal, nothing shared between them: a walk, linear in their size
    x, y = _doubled(15), _doubled(15)
    assert json_equal(x, y)
    y2 = _doubled(15)
    y2[1] = [y2[1][0], [[[[[[[[[[[[[[[2]]]]]]]]]]]]]]]]
    assert not json_equal(x, y2)


def test_eq_never_recurses_into_a_recursion_error() -> None:
    deep: Any = 1
    deep2: Any = 1
    for _ in range(50_000):
        deep, deep2 = [deep], [deep2]
    assert json_equal(deep, deep2)


def test_contains_and_eq_in_a_flow_on_the_largest_values() -> None:
    grown = [setn("l0", "l", [1], "l1")] + [
        setn(f"l{k}", "l", [ref("l"), ref("l")], f"l{k + 1}") for k in range(1, 16)
    ]
    copy = [setn("m0", "m", [1], "m1")] + [
        setn(f"m{k}", "m", [ref("m"), ref("m")], f"m{k + 1}") for k in range(1, 16)
    ]
    copy[-1]["next"] = "eq"
    grown[-1]["next"] = "m0"
    nodes = [
        *grown,
        *copy,
        {
            "id": "eq",
            "type": "if",
            "condition": {"op": "eq", "left": ref("l"), "right": ref("m")},
            "then": "in",
            "else": "no",
        },
        {
            "id": "in",
            "type": "if",
            "condition": {"op": "contains", "left": ref("l"), "right": ref("m[1]")},
            "then": "r",
            "else": "no",
        },
        ret("same"),
        ret("different", "no"),
    ]
    started = time.monotonic()
    result = go(manifest(nodes))
    assert result.ok and result.output == "same"
    assert time.monotonic() - started < 2.0


# --- state and defaults (SPEC §16) -------------------------------------------------------------

SHORT = {"fields": {"s": {"type": "string", "maxLength": 2}}, "maxBytes": 1000}


def _store(value: Any) -> dict[str, Any]:
    return manifest(
        [
            {
                "id": "make",
                "type": "capability",
                "capability": "tasks.create",
                "input": {"title": "t"},
                "compensation": "tasks.setStatus",
                "next": "w",
            },
            setn("w", "state.s", value, "r"),
            ret(ref("state.s")),
        ],
        state=SHORT,
    )


def test_invalid_state_is_not_persisted_and_the_run_is_undone() -> None:
    h = MemoryHost()
    h.states["test-tool"] = {"s": "ok"}
    result = go(_store(ref("input.n")), {"n": 123}, h=h)
    assert code_of(result) == "RUN_STATE_INVALID"
    assert "state.s must be string" in result.error.message
    assert h.states["test-tool"] == {"s": "ok"} and h.saved_states == []
    assert [c.status for c in result.compensations] == ["undone"]
    too_long = go(_store("abc"), h=h)
    assert code_of(too_long) == "RUN_STATE_INVALID" and h.saved_states == []
    assert go(_store("ab"), h=h).ok and h.states["test-tool"] == {"s": "ab"}


def test_stored_state_is_checked_before_the_first_step() -> None:
    h = MemoryHost()
    m = manifest([ret(ref("state.s"))], state=SHORT)
    h.states["test-tool"] = {"s": 5}
    result = go(m, h=h)
    assert code_of(result) == "RUN_STATE_INVALID" and result.transitions == 0
    h.states["test-tool"] = {"s": "x" * 2000}  # over maxBytes: never saved by a run
    assert code_of(go(m, h=h)) == "RUN_STATE_INVALID"
    # a field this version does not declare is dropped, not persisted again
    h.states["test-tool"] = {"s": "ok", "old": [1, 2]}
    assert go(m, h=h).ok and h.states["test-tool"] == {"s": "ok"}


def test_a_state_default_that_breaks_its_schema_is_refused() -> None:
    state = {"fields": {"s": {"type": "string", "maxLength": 2, "default": "long"}}, "maxBytes": 99}
    h = MemoryHost()
    result = go(manifest([ret(ref("state.s"))], state=state), h=h)
    assert code_of(result) == "RUN_STATE_INVALID" and h.saved_states == []


def test_an_input_default_that_breaks_its_schema_is_never_injected() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 5, "default": 500}},
    }
    m = manifest([ret(ref("input"))], inputSchema=schema)
    for supplied in ({}, {"n": 3}):
        result = go(m, supplied)
        assert code_of(result) == "RUN_INPUT_INVALID", result
        assert "inputSchema.properties.n" in result.error.message
        assert result.transitions == 0
    nested = {
        "type": "object",
        "properties": {
            "o": {"type": "object", "properties": {"k": {"type": "string", "default": 7}}}
        },
    }
    assert code_of(go(manifest([ret(ref("input"))], inputSchema=nested), {})) == (
        "RUN_INPUT_INVALID"
    )
    good = {"type": "object", "properties": {"n": {"type": "integer", "default": 4}}}
    assert go(manifest([ret(ref("input"))], inputSchema=good), {}).output == {"n": 4}


# --- the same through `forgec run` on the reference SQLite host ----------------------------------


def _tool(tmp_path: Path, **extra: Any) -> Path:
    m = {
        "schema": "talos.local-tool.v1",
        "id": "state-tool",
        "version": 1,
        "title": "State tool",
        "description": "Stores its input in its state.",
        "createdAt": "2026-12-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {"type": "object"},
        "outputSchema": {},
        "flow": {
            "entry": "w",
            "maxTransitions": 10,
            "nodes": [setn("w", "state.s", ref("input.v"), "r"), ret(ref("state.s"))],
        },
        "state": SHORT,
    }
    m.update(extra)
    m = {k: v for k, v in m.items() if v is not None or k == "parentVersion"}
    path = tmp_path / "state.talostool"
    path.write_text(orjson.dumps(m).decode())
    return path


def _cli(capsys: Any, *argv: str) -> tuple[int, dict[str, Any] | None, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    try:
        return code, orjson.loads(out), err
    except orjson.JSONDecodeError:
        return code, None, out + err


def test_forgec_run_refuses_to_persist_an_invalid_state(tmp_path: Path, capsys: Any) -> None:
    path, db = _tool(tmp_path), str(tmp_path / "host.db")
    base = ("run", "--yes", "--format", "json", "--db", db, str(path))
    code, result, _ = _cli(capsys, *base[:-1], "--input", '{"v": "ab"}', base[-1])
    assert code == 0 and result is not None and result["output"] == "ab"
    for bad in ('{"v": 123}', '{"v": "abc"}'):
        code, result, _ = _cli(capsys, *base[:-1], "--input", bad, base[-1])
        assert code != 0 and result is not None
        assert result["error"]["code"] == "RUN_STATE_INVALID"
    # what is stored is still the last valid state
    reader = _tool(tmp_path, flow={"entry": "r", "maxTransitions": 5, "nodes": [ret(ref("state"))]})
    code, result, _ = _cli(capsys, *base[:-1], str(reader))
    assert code == 0 and result is not None and result["output"] == {"s": "ab"}


def test_forgec_run_never_injects_a_bad_input_default(tmp_path: Path, capsys: Any) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "default": 123}}}
    flow = {"entry": "r", "maxTransitions": 5, "nodes": [ret(ref("input"))]}
    path = _tool(tmp_path, inputSchema=schema, flow=flow, state=None)
    code, result, text = _cli(
        capsys, "run", "--yes", "--format", "json", "--db", str(tmp_path / "h.db"), str(path)
    )
    assert code != 0
    # the checker refuses the manifest (gt-builder's static rule), or the run refuses it
    if result is not None and "error" in result:
        assert result["error"]["code"] == "RUN_INPUT_INVALID"
        assert "inputSchema.properties.v has a default" in result["error"]["message"]
    else:
        assert "FORGE_MANIFEST_STRUCTURE" in text and "default" in text


# --- forgec inspect: the static worst case of the largest value ---------------------------------


def _inspect(tmp_path: Path, capsys: Any, nodes: list[dict[str, Any]]) -> tuple[Any, str]:
    path = _tool(tmp_path, flow={"entry": nodes[0]["id"], "maxTransitions": 50, "nodes": nodes})
    assert main(["inspect", "--format", "json", str(path)]) == 0
    data = orjson.loads(capsys.readouterr().out)
    main(["inspect", str(path)])
    return data["values"], capsys.readouterr().out


def test_inspect_bounds_a_flow_of_literals_and_input(tmp_path: Path, capsys: Any) -> None:
    nodes = [setn("a", "a", "abc", "b"), setn("b", "b", [ref("a"), ref("a")], "r"), ret(ref("b"))]
    values, text = _inspect(tmp_path, capsys, nodes)
    assert values == {"largestBytes": len('["abc","abc"]'), "limit": LIMIT}
    assert "largest value 13 bytes at most" in text
    # the input is at most 64 KiB; a template may escape each character of a non-string
    nodes = [setn("a", "a", {"$template": "{{input.v}}!"}, "r"), ret(ref("a"))]
    values, _ = _inspect(tmp_path, capsys, nodes)
    assert values["largestBytes"] == 2 + 2 * 65_536 + 1


def test_inspect_leaves_growth_and_results_to_the_run(tmp_path: Path, capsys: Any) -> None:
    doubling = [
        setn("s", "v", "ab", "d0"),
        setn("d0", "v", {"$template": "{{v}}{{v}}"}, "d1"),
        setn("d1", "v", {"$template": "{{v}}{{v}}"}, "r"),
        ret(ref("v")),
    ]
    values, text = _inspect(tmp_path, capsys, doubling)
    assert values["largestBytes"] is None
    assert "largest value bounded at run time: 256 KiB" in text
    call = [
        {
            "id": "c",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"limit": 1},
            "target": "t",
            "next": "r",
        },
        ret(ref("t")),
    ]
    assert _inspect(tmp_path, capsys, call)[0]["largestBytes"] is None


# --- a property: the VM refuses exactly the first value over the limit -------------------------


VARS = ("a", "b", "c")
STEP = st.tuples(
    st.sampled_from(VARS),  # target
    st.sampled_from(["list", "obj", "tpl"]),
    st.lists(st.sampled_from(VARS), min_size=1, max_size=3),  # what it reads
)


def _oracle(steps: list[tuple[str, str, list[str]]]) -> tuple[int | None, int]:
    """(index of the first step whose value is over the limit, or None; output size), from
    exact integer arithmetic on sizes alone: a value is (JSON bytes, `"` count, `\\` count,
    is a string). Nothing is built, so 2^40 is as cheap as 2."""
    env: dict[str, tuple[int, int, int, bool]] = {
        "a": (4, 2, 0, True),  # "ab"
        "b": (1, 0, 0, False),  # 1
        "c": (2, 0, 0, False),  # []
    }
    for i, (target, kind, reads) in enumerate(steps):
        parts = [env[r] for r in reads]
        if kind == "list":
            value = (
                1 + len(parts) + sum(p[0] for p in parts),
                sum(p[1] for p in parts),
                sum(p[2] for p in parts),
                False,
            )
        elif kind == "obj":  # keys k0, k1, …: each `"kN":` is 5 bytes and 2 quotes
            value = (
                1 + len(parts) + sum(5 + p[0] for p in parts),
                sum(2 + p[1] for p in parts),
                sum(p[2] for p in parts),
                False,
            )
        else:  # "{{x}}-{{y}}": a string's text as it is, anything else escaped
            size, quotes, slashes = 2 + len(parts) - 1, 2, 0
            for s, q, b, is_str in parts:
                if is_str:
                    size, quotes, slashes = size + s - 2, quotes + q - 2, slashes + b
                else:
                    size, quotes, slashes = size + s + q + b, quotes + q, slashes + 2 * b + q
            value = (size, quotes, slashes, True)
        if value[0] > LIMIT:
            return i, 0
        env[target] = value
    return None, env["a"][0]


def _build(kind: str, reads: list[str]) -> Any:
    if kind == "list":
        return [ref(r) for r in reads]
    if kind == "obj":
        return {f"k{i}": ref(r) for i, r in enumerate(reads)}
    return {"$template": "-".join("{{" + r + "}}" for r in reads)}


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=45))
def test_the_vm_refuses_exactly_the_first_value_over_the_limit(steps: list[Any]) -> None:
    seeds = [setn("sa", "a", "ab", "sb"), setn("sb", "b", 1, "sc"), setn("sc", "c", [], "n0")]
    nodes = [
        setn(f"n{i}", target, _build(kind, reads), f"n{i + 1}" if i + 1 < len(steps) else "r")
        for i, (target, kind, reads) in enumerate(steps)
    ]
    started = time.monotonic()
    result = go(manifest([*seeds, *nodes, ret(ref("a"))]))
    assert time.monotonic() - started < 5.0
    over, output_size = _oracle(steps)
    if over is None:
        assert result.ok, result.error
        assert len(orjson.dumps(result.output)) == output_size
    else:
        assert code_of(result) == "RUN_VALUE_TOO_LARGE", result.error
        assert result.error.node == f"n{over}"


NAMED = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 10},
        "mood": {"enum": ["happy", "sad"]},
        "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 4}},
    },
    "required": ["name", "mood", "tags"],
    "additionalProperties": False,
}
GREETING = [
    setn("g", "g", {"$template": "Hi {{input.name}}, {{input.mood}} {{input.tags}}"}, "r"),
    ret([ref("g"), ref("input.tags")]),
]


def test_inspect_uses_the_input_schema_to_bound_input_values(tmp_path: Path, capsys: Any) -> None:
    path = _tool(
        tmp_path,
        inputSchema=NAMED,
        flow={"entry": "g", "maxTransitions": 5, "nodes": GREETING},
        state=None,
    )
    assert main(["inspect", "--format", "json", str(path)]) == 0
    largest = orjson.loads(capsys.readouterr().out)["values"]["largestBytes"]
    # name: 6 × 10 + 2 bytes, its text 60; mood: "happy" 7, as JSON in text twice that;
    # tags: 2 + 3 × (26 + 1) = 83, twice in text; the literal text 7; the quotes 2
    template = 2 + len("Hi , ") + 1 + 60 + 2 * 7 + 2 * 83
    assert largest == 1 + 2 + template + 83


@settings(max_examples=80, deadline=None)
@given(
    name=st.text(max_size=10),
    mood=st.sampled_from(["happy", "sad"]),
    tags=st.lists(st.text(max_size=4), max_size=3),
)
def test_the_static_bound_holds_for_every_valid_input(name: str, mood: str, tags: Any) -> None:
    m = manifest(GREETING, inputSchema=NAMED)
    bound = largest_value_bound(build_ir(m))
    assert bound is not None
    result = go(m, {"name": name, "mood": mood, "tags": tags})
    assert result.ok, result.error
    assert len(orjson.dumps(result.output)) <= bound
    assert len(orjson.dumps(result.output[0])) <= bound


def test_a_variable_that_read_the_state_keeps_what_it_read() -> None:
    # values never change in place: writing state.s after `snap = $state` leaves snap alone
    state = {"fields": {"s": {"type": "string"}}, "maxBytes": 100}
    m = manifest(
        [
            setn("a", "state.s", "one", "snap"),
            setn("snap", "snap", ref("state"), "b"),
            setn("b", "state.s", "two", "r"),
            ret([ref("snap"), ref("state")]),
        ],
        state=state,
    )
    h = MemoryHost()
    result = go(m, h=h)
    assert result.output == [{"s": "one"}, {"s": "two"}]
    assert h.states["test-tool"] == {"s": "two"} and result.state == {"s": "two"}
