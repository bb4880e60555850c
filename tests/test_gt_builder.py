"""Ground truth for the builder: what `check` accepts downstream takes, through the real CLI.

A document that is not an object, the loop-literal crash of issue 12, `.forge` source limits
(size before parsing, lone surrogates) and the one table of node fields that every consumer
reads (builder, schema exporter, `.forge` formatter, Program verifier).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from cli_inprocess import run_main
from hypothesis import example, given, settings
from hypothesis import strategies as st

import forgec
from forgec.frontend.dsl_format import format_forge
from forgec.frontend.schema import manifest_json_schema
from forgec.ir import nodes as ir_nodes
from forgec.ir.rules import (
    MAX_FORGE_BYTES,
    MAX_SAFE_INTEGER,
    NODE_FIELDS,
    NODE_ORDER,
    SCHEMA_KEYWORDS,
)
from forgec.ir.suggest import closest, suggest
from forgec.ir.text_rules import escape_char, escape_unsafe, unsafe_chars
from forgec.runtime.program import Program, ProgramError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

LOOP_FORGE = """tool loop-crash {
  version 1
  title "Loop"
  description "A variable written only in a loop, from a literal."
  created "2026-11-02T09:00:00Z"
  parent null
  network forbidden
  flow entry scan max 20 {
    scan: for t in [1] max 5 { s: summary = LITERAL } -> done
    done: return $summary
  }
}
"""


def forgec_cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
    )


# ---- a document that is not an object ----------------------------------------------------------


@pytest.mark.parametrize("text", ["null", "1", "[]", '"tool"', "true"])
@pytest.mark.parametrize(
    "command",
    [["check"], ["lower"], ["run", "--yes"], ["tools", "install"], ["inspect"], ["fmt"]],
    ids=lambda c: " ".join(c),
)
def test_a_document_that_is_not_an_object_fails_cleanly(
    tmp_path: Path, text: str, command: list[str]
) -> None:
    path = tmp_path / "tool.talostool"
    path.write_text(text + "\n")
    store = ["--store", str(tmp_path / "store.db")] if command[0] == "tools" else []
    done = forgec_cli(*command, str(path), *store, cwd=tmp_path)
    both = done.stdout + done.stderr
    assert done.returncode == 1, both
    assert "Traceback" not in both
    assert "0 errors" not in both and "no problems" not in both
    if command[0] in ("check", "lower", "run", "tools"):
        assert "error[FORGE_MANIFEST_STRUCTURE]" in both and "a manifest is a JSON object" in both
    else:
        assert "error" in both or "a manifest is a JSON object" in both


def test_null_is_a_structure_error_through_the_api() -> None:
    report = forgec.check(b"null")
    assert not report.ok
    assert [d.code for d in report.diagnostics] == ["FORGE_MANIFEST_STRUCTURE"]
    with pytest.raises(forgec.CheckError):
        forgec.lower(b"null")


# ---- issue 12: a list or object literal written only inside a loop -----------------------------


@pytest.mark.parametrize("literal", ["[1, 2]", "{a: 1}", "{a: [1, {b: 2}]}"])
def test_a_literal_written_only_in_a_loop_never_crashes(tmp_path: Path, literal: str) -> None:
    src = tmp_path / "loop.forge"
    src.write_text(LOOP_FORGE.replace("LITERAL", literal))
    report = forgec.check(src.read_bytes(), path=str(src))
    assert report.ok
    assert [d.code for d in report.diagnostics] == ["FORGEC_REF_MAYBE_UNDEFINED"]
    assert "loop `scan`" in (report.diagnostics[0].hint or "")
    store = ["--store", str(tmp_path / "store.db")]
    for command in (
        ["check"],
        ["inspect"],
        ["lower"],
        ["run", "--yes"],
        ["tools", "install", *store],
    ):
        # in this process: the promise is each command's answer, not its process (the
        # commands' own subprocess tests are tests/test_examples.py's and tests/test_cli.py's)
        done = run_main(*command[:1], *command[1:2], str(src), *command[2:], cwd=tmp_path)
        both = done.stdout + done.stderr
        assert "Traceback" not in both and "unhashable" not in both, (command, both)
        assert done.returncode == 0, (command, both)


def test_lower_of_a_loop_literal_through_the_real_process(tmp_path: Path) -> None:
    """`lower`'s real-subprocess test (the one above runs each command in this process)."""
    src = tmp_path / "loop.forge"
    src.write_text(LOOP_FORGE.replace("LITERAL", "[1, 2]"))
    done = forgec_cli("lower", str(src), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout and "Traceback" not in done.stderr, done.stderr


def test_ir_nodes_refuse_to_be_hashed() -> None:
    """Hashing an IR node would hash the JSON values inside it: it must fail on every node,
    not only on the ones holding a list, so a pass that tries is caught by any test."""
    node = ir_nodes.ReturnNode(id="r", pointer="/flow/nodes/0", value=ir_nodes.Literal(1, "/v"))
    with pytest.raises(TypeError):
        hash(node)
    with pytest.raises(TypeError):
        hash(ir_nodes.Literal("text", "/v"))


# ---- `.forge` source limits --------------------------------------------------------------------


def test_an_oversized_forge_text_is_refused_before_parsing() -> None:
    # 3 MB of text that would take the parser seconds if it were read
    text = LOOP_FORGE.replace("LITERAL", "[" + "1, " * 1_000_000 + "1]")
    assert len(text.encode()) > MAX_FORGE_BYTES
    for source in (text, text.encode()):
        start = time.perf_counter()
        report = forgec.check(source, path="big.forge")
        elapsed = time.perf_counter() - start
        assert [d.code for d in report.diagnostics] == ["FORGE_MANIFEST_TOO_LARGE"]
        # parsing it would take the parser many seconds; 2 s holds on a loaded machine
        assert elapsed < 2.0, elapsed
    with pytest.raises(forgec.CheckError):
        forgec.compile_dsl(text)


def test_a_forge_text_at_the_limit_is_parsed() -> None:
    text = LOOP_FORGE.replace("LITERAL", "[1, 2]")
    padded = text + "#" * (MAX_FORGE_BYTES - len(text.encode()) - 1) + "\n"
    assert len(padded.encode()) == MAX_FORGE_BYTES
    codes = [d.code for d in forgec.check(padded, path="edge.forge").diagnostics]
    assert "FORGE_MANIFEST_TOO_LARGE" not in codes


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    text = LOOP_FORGE.replace("LITERAL", "[1]") + "# " + "é" * (MAX_FORGE_BYTES // 2) + "\n"
    assert len(text) < MAX_FORGE_BYTES < len(text.encode())
    codes = [d.code for d in forgec.check(text, path="wide.forge").diagnostics]
    assert codes == ["FORGE_MANIFEST_TOO_LARGE"]


@pytest.mark.parametrize("form", ["forge", "talostool"])
def test_a_str_source_with_a_lone_surrogate_is_a_structure_error(form: str) -> None:
    if form == "forge":
        source = LOOP_FORGE.replace("LITERAL", "[1]").replace("Loop", "Lo\udc80op")
    else:
        raw = (CORPUS / "FORGE_TITLE.bidi.boundary.talostool").read_text()
        source = raw.replace("Invoice", "Inv\ud800oice")
    report = forgec.check(source, path=f"tool.{form}")
    assert [d.code for d in report.diagnostics] == ["FORGE_MANIFEST_STRUCTURE"]
    assert "surrogate" in report.diagnostics[0].message


# ---- text rules: one table for the checker and the renderers -----------------------------------


def test_unsafe_chars_names_every_control_and_bidi_character() -> None:
    for ch in ["\x00", "\x1b", "\x7f", "\x85", "\x9f", "\u061c", "\u200e", "\u200f"]:
        assert unsafe_chars(f"a{ch}b") == [(1, ch)]
    for ch in [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]:
        assert unsafe_chars(ch) == [(0, ch)]
    for ch in ["\xa0", "\u200b", "\u2028", "é", "日", "😀", "\u202f", "\u2065", "\u206a"]:
        assert unsafe_chars(ch) == [], repr(ch)
    assert unsafe_chars("a\nb\tc", allow="\n\t") == []
    assert unsafe_chars("a\nb\rc", allow="\n\t") == [(3, "\r")]
    assert escape_char("\x1b") == "\\x1b" and escape_char("\u202e") == "\\u202e"
    assert escape_unsafe("x\x1b[31m\u202ey\n", allow="\n") == "x\\x1b[31m\\u202ey\n"


# ---- the one "did you mean" --------------------------------------------------------------------


def test_suggest_finds_near_names_and_spares_hostile_words() -> None:
    assert suggest("tagret", ["target", "value"]) == "did you mean `target`?"
    assert closest("TYPE", ["type", "then"]) == "type"
    assert suggest("cuont", ["count"], prefix="state.") == "did you mean `state.count`?"
    assert suggest("zzz", ["count"]) is None
    assert closest("x" * 100_000, ["xxxx"]) is None
    start = time.perf_counter()
    assert closest("a" * 150, ["a" * 140, "b" * 140]) in (None, "a" * 140)
    assert time.perf_counter() - start < 0.5


# ---- each node field in one table --------------------------------------------------------------


def _node_with_every_field(typ: str) -> dict[str, Any]:
    """A node of `typ` with every field of the table present and valid."""
    samples: dict[str, Any] = {
        "name": "v",
        "value": {"x": 1},
        "op": "summarize",
        "retry": {"attempts": 2, "backoffMs": 100},
        "requirements": {"privacy": "local-only"},
        "schema": {"type": "object"},
        "condition": {"op": "eq", "left": 1, "right": 1},
        "max_items": 3,
        "body": [{"id": "inner", "type": "set", "target": "w", "value": 1}],
        "fail_code": "NOT_FOUND",
        "message": "Nothing found.",
    }
    node: dict[str, Any] = {"id": "n", "type": typ}
    for f in NODE_FIELDS[typ]:
        node[f.name] = samples[f.kind]
    if typ == "capability":
        node.update(capability="tasks.create", input={"title": "Call back"}, target="task")
        node["compensation"] = "tasks.setStatus"
    if typ == "foreach":
        node.update(source=[1, 2], itemVar="item", indexVar="i")
    if "next" in node or typ == "if":
        node.update({k: "done" for k in ("next", "then", "else") if k in node})
    return node


def _manifest(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    raw = orjson.loads((CORPUS / "FORGE_TITLE.bidi.boundary.talostool").read_bytes())
    raw["flow"]["nodes"] = [*nodes, {"id": "done", "type": "return", "value": {"ok": True}}]
    raw["flow"]["entry"] = nodes[0]["id"]
    return raw


def test_every_node_field_is_known_to_every_consumer() -> None:
    schema = manifest_json_schema()
    definitions = schema["definitions"]
    for typ, fields in NODE_FIELDS.items():
        # the IR: one attribute per field, in the table's order after `id` and `pointer`
        cls = ir_nodes.NODE_TYPES[typ]
        assert [a.name for a in attrs.fields(cls)] == ["id", "pointer", *(f.attr for f in fields)]
        # the JSON Schema exporter: exactly the table's fields, at the top level
        assert list(definitions[f"{typ}Node"]["properties"]) == list(NODE_ORDER[typ])
        node = _node_with_every_field(typ)
        raw = _manifest([node])
        # the builder: each field lands in its IR attribute
        report = forgec.check(orjson.dumps(raw), target="talon")
        built = next(n for n in report.ir.flow.nodes if n.id == "n")  # type: ignore[union-attr]
        for f in fields:
            assert getattr(built, f.attr) is not None, (typ, f.name)
        # the formatter writes every field in its sugar (no `raw` fallback) and the text
        # compiles back to the same node
        assert report.ok, (typ, [d.message for d in report.errors])
        text = format_forge(raw)
        assert "raw " not in text.split("flow", 1)[1], (typ, text)
        back = forgec.compile_dsl(text)
        assert back["flow"]["nodes"][0] == raw["flow"]["nodes"][0]
        # the verifier accepts the lowered Program
        program = forgec.lower(raw, target="talon")
        Program.from_json(program.to_json())


def test_the_schema_subset_keywords_are_one_table() -> None:
    subset = manifest_json_schema()["definitions"]["jsonSchema"]["properties"]
    assert set(subset) == set(SCHEMA_KEYWORDS)
    from forgec.runtime.program import verify_schema

    verify_schema({k: v for k, v in {"type": "string", "title": "t"}.items()}, "s")
    with pytest.raises(ProgramError):
        verify_schema({"pattern": "x"}, "s")


# ---- a default the checker accepts is one the runtime accepts ----------------------------------

_DEFAULTS = [
    ({"type": "integer", "minimum": 1}, 1, 0),
    ({"type": "string", "maxLength": 3}, "abc", "abcd"),
    ({"enum": ["a", "b"]}, "b", "c"),
    ({"type": "array", "items": {"type": "integer"}, "maxItems": 2}, [1, 2], [1, "x"]),
    ({"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}}, {"k": ""}, {}),
]


@pytest.mark.parametrize(("schema", "good", "bad"), _DEFAULTS)
def test_defaults_are_judged_like_the_runtime_judges_input(
    schema: dict[str, Any], good: Any, bad: Any
) -> None:
    from forgec.runtime import run
    from forgec.runtime.memory_host import MemoryHost

    def tool(default: Any) -> dict[str, Any]:
        raw = _manifest([{"id": "echo", "type": "set", "target": "v", "value": 1, "next": "done"}])
        raw["inputSchema"] = {"type": "object", "properties": {"p": {**schema, "default": default}}}
        raw["flow"]["nodes"][-1]["value"] = {"p": {"$ref": "input.p"}}
        return raw

    program = forgec.lower(tool(good))
    result = run(program, {}, host=MemoryHost(), consent=lambda r: True).to_json()
    assert result["output"] == {"p": good}, result
    report = forgec.check(orjson.dumps(tool(bad)))
    assert [(d.code, d.path) for d in report.diagnostics] == [
        ("FORGE_MANIFEST_STRUCTURE", "/inputSchema/properties/p/default")
    ]


# ---- one cause, one code: a state field with a bad schema is still declared --------------------


def test_a_state_field_with_a_bad_keyword_gets_one_code_only() -> None:
    raw = orjson.loads(
        (CORPUS / "FORGE_TARGET_UNSAFE.state-schema-bad.boundary.talostool").read_bytes()
    )
    report = forgec.check(orjson.dumps(raw))
    assert [(d.code, d.path) for d in report.diagnostics] == [
        ("FORGE_MANIFEST_STRUCTURE", "/state/fields/count/pattern")
    ]


# ---- integers within ±(2^53 − 1), wherever they stand ------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),  # what JSON text can carry to us
    st.sampled_from(["value", "list", "nested", "enum", "const", "minimum"]),
)
@example(2**53 - 1, "value")
@example(2**53, "value")
@example(-(2**53) + 1, "nested")
@example(-(2**53), "nested")
@example(2**53, "enum")
@example(2**53 - 1, "minimum")
def test_integers_are_refused_exactly_outside_the_safe_range(n: int, where: str) -> None:
    raw = _manifest([{"id": "keep", "type": "set", "target": "v", "value": 1, "next": "done"}])
    if where == "value":
        raw["flow"]["nodes"][0]["value"] = n
    elif where == "list":
        raw["flow"]["nodes"][0]["value"] = [0, n]
    elif where == "nested":
        raw["flow"]["nodes"][0]["value"] = {"a": [{"b": n}], "r": {"$ref": "input.x"}}
    else:
        raw["inputSchema"] = {
            "type": "object",
            "properties": {"x": {where: [n] if where == "enum" else n}},
        }
    report = forgec.check(orjson.dumps(raw))
    codes = [d.code for d in report.diagnostics if "2^53" in d.message]
    assert codes == ([] if abs(n) <= MAX_SAFE_INTEGER else ["FORGE_MANIFEST_STRUCTURE"])


# ---- the default check decides as the runtime's validator does ---------------------------------

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from([0.0, 1.0, 1.5, -2.0, 3.25])
    | st.sampled_from(["", "a", "ab", "abc", "😀", "é"])
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=6,
)
_TYPES = st.sampled_from(["string", "number", "integer", "boolean", "object", "array", "null"])


@st.composite
def _subset_schemas(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    if draw(st.booleans()):
        schema["type"] = draw(_TYPES | st.lists(_TYPES, min_size=1, max_size=2, unique=True))
    for key in ("minimum", "maximum"):
        if draw(st.integers(0, 4)) == 0:
            schema[key] = draw(st.integers(-3, 3) | st.sampled_from([0.5, 1.0]))
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        if draw(st.integers(0, 4)) == 0:
            schema[key] = draw(st.integers(0, 3))
    if draw(st.integers(0, 5)) == 0:
        schema["enum"] = draw(st.lists(_VALUES, min_size=1, max_size=3))
    if draw(st.integers(0, 6)) == 0:
        schema["const"] = draw(_VALUES)
    if depth < 2 and draw(st.integers(0, 3)) == 0:
        schema["items"] = draw(_subset_schemas(depth + 1))
    if depth < 2 and draw(st.integers(0, 2)) == 0:
        names = draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True))
        schema["properties"] = {n: draw(_subset_schemas(depth + 1)) for n in names}
        if draw(st.booleans()):
            schema["required"] = draw(
                st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True)
            )
        if draw(st.booleans()):
            schema["additionalProperties"] = draw(st.booleans())
    return schema


@settings(max_examples=600, deadline=None)
@given(_subset_schemas(), _VALUES)
def test_the_subset_validator_agrees_with_fastjsonschema(
    schema: dict[str, Any], value: Any
) -> None:
    import fastjsonschema

    from forgec.ir.json_subset import schema_problem

    try:
        fastjsonschema.validate(schema, value, use_default=False, use_formats=False)
        runtime_ok = True
    except fastjsonschema.JsonSchemaValueException:
        runtime_ok = False
    except fastjsonschema.JsonSchemaDefinitionException:
        # a schema the runtime cannot use at all must not pass the checker either
        raw = _manifest([{"id": "keep", "type": "set", "target": "v", "value": 1, "next": "done"}])
        raw["inputSchema"] = schema
        assert not forgec.check(orjson.dumps(raw)).ok, schema
        return
    assert (schema_problem(schema, value) is None) == runtime_ok, (schema, value)


def test_a_thousand_defaults_check_fast() -> None:
    raw = _manifest([{"id": "keep", "type": "set", "target": "v", "value": 1, "next": "done"}])
    props = {f"p{i}": {"type": "integer", "default": 1} for i in range(1500)}
    raw["inputSchema"] = {"type": "object", "properties": props, "default": {}}
    start = time.perf_counter()
    assert forgec.check(orjson.dumps(raw)).ok
    assert time.perf_counter() - start < 3.0  # a budget for a loaded 2-core machine


# ---- the Program verifier enforces the table's limits ------------------------------------------


@pytest.mark.parametrize(
    ("pool", "key", "limits"),
    [
        ("calls", "attempts", "RETRY_ATTEMPTS"),
        ("calls", "backoffMs", "RETRY_BACKOFF_MS"),
        ("loops", "maxItems", "MAX_ITEMS"),
    ],
)
def test_the_verifier_reads_the_limits_from_the_table(pool: str, key: str, limits: str) -> None:
    from forgec.ir import rules

    loop = _node_with_every_field("foreach")
    loop["next"] = "call"
    call = _node_with_every_field("capability")
    call["id"] = "call"
    call["next"] = "done"
    loop["body"][0]["id"] = "inner"
    doc = forgec.lower(_manifest([loop, call]), target="talon").to_json()
    low, high = getattr(rules, limits)
    for value, ok in ((low, True), (high, True), (low - 1, False), (high + 1, False)):
        doc[pool][0][key] = value
        if ok:
            Program.from_json(orjson.dumps(doc))
        else:
            with pytest.raises(ProgramError):
                Program.from_json(orjson.dumps(doc))
