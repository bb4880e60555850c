"""The bounded VM: every RUN_* code triggered and its boundary not, bounds, retries,
compensations, state, consent and credentials (SPEC §8, §12 "Run semantics")."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_interp import lower_dict, manifest
from strategies import json_values, scalars

from forgec.runtime import ConsentDenied, Program, run
from forgec.runtime.memory_host import MemoryHost

CLOCK = "2026-01-01T00:00:00Z"


def yes(_request: Any) -> bool:
    return True


def host(**kw: Any) -> MemoryHost:
    return MemoryHost(clock=lambda: CLOCK, **kw)


def go(m: dict[str, Any], input: Any = None, h: MemoryHost | None = None, **kw: Any) -> Any:
    program = lower_dict(m)
    return run(program, {} if input is None else input, host=h or host(), consent=yes, **kw)


def ret(value: Any, nid: str = "r") -> dict[str, Any]:
    return {"id": nid, "type": "return", "value": value}


def setn(nid: str, target: str, value: Any, nxt: str | None) -> dict[str, Any]:
    node = {"id": nid, "type": "set", "target": target, "value": value}
    if nxt:
        node["next"] = nxt
    return node


def cap(nid: str, capability: str, input: Any, nxt: str | None, **kw: Any) -> dict[str, Any]:
    node = {"id": nid, "type": "capability", "capability": capability, "input": input, **kw}
    if nxt:
        node["next"] = nxt
    return node


def iff(nid: str, op: str, left: Any, right: Any, then: str, else_: str) -> dict[str, Any]:
    cond = {"op": op, "left": left}
    if op not in ("truthy", "exists"):
        cond["right"] = right
    return {"id": nid, "type": "if", "condition": cond, "then": then, "else": else_}


def ref(path: str) -> dict[str, str]:
    return {"$ref": path}


def code_of(result: Any) -> str | None:
    return result.error.code if result.error else None


# --- the result shape ---------------------------------------------------------------------


def test_result_json_has_exactly_the_spec_shape() -> None:
    result = go(manifest([ret({"ok": True})]))
    assert result.to_json() == {
        "status": "ok",
        "output": {"ok": True},
        "error": None,
        "transitions": 1,
        "compensations": [],
    }


def test_failed_result_names_the_node_and_its_line() -> None:
    result = go(manifest([ret(ref("input.nope"))]))
    assert result.to_json()["error"] == {
        "code": "RUN_REF_MISSING",
        "message": "input.nope: input has no key 'nope'",
        "node": "r",
    }
    assert result.output is None and result.status == "failed"


# --- input -----------------------------------------------------------------------------------

SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


def test_input_invalid_against_schema() -> None:
    m = manifest([ret(ref("input.n"))], inputSchema=SCHEMA)
    bad = go(m, {"n": "three"})
    assert code_of(bad) == "RUN_INPUT_INVALID"
    assert "input.n must be integer" in bad.error.message and bad.error.node is None
    assert bad.transitions == 0
    assert code_of(go(m, {})) == "RUN_INPUT_INVALID"
    assert go(m, {"n": 3}).output == 3
    # JSON Schema: 1.0 is an integer
    assert go(m, {"n": 1.0}).ok
    assert code_of(go(m, {"n": True})) == "RUN_INPUT_INVALID"


def test_input_that_is_not_json_is_invalid_not_a_crash() -> None:
    result = go(manifest([ret(1)]), {"a": {1, 2}})
    assert code_of(result) == "RUN_INPUT_INVALID"


def test_input_size_limit_is_64_kib_exactly() -> None:
    m = manifest([ret(1)])
    at_limit = {"s": "x" * (65536 - len(b'{"s":""}'))}
    assert len(orjson.dumps(at_limit)) == 65536
    assert go(m, at_limit).ok
    over = {"s": "x" * (65537 - len(b'{"s":""}'))}
    result = go(m, over)
    assert code_of(result) == "RUN_INPUT_TOO_LARGE"
    assert "65537 bytes" in result.error.message


# --- consent and credentials -------------------------------------------------------------------


def test_consent_refused_runs_nothing() -> None:
    h = host()
    m = manifest([cap("c", "tasks.create", {"title": "x"}, "r"), ret(1)])
    program = lower_dict(m)
    refused = run(program, {}, host=h, consent=lambda r: False)
    assert code_of(refused) == "RUN_CONSENT_DENIED"
    assert h.calls == [] and h.tasks == {}
    assert code_of(run(program, {}, host=h)) == "RUN_CONSENT_DENIED"  # no callback: deny

    def why(_r: Any) -> bool:
        raise ConsentDenied("pass --yes to run it")

    denied = run(program, {}, host=h, consent=why)
    assert denied.error.message == "pass --yes to run it"
    assert run(program, {}, host=h, consent=yes).ok


def test_consent_sees_marks_and_r4_asks_every_run() -> None:
    from forgec.ir.marks import Marks

    m = manifest([ret(1)])
    program = lower_dict(m, marks=Marks(powers=("Network",), risk="R4", always_asks=True))
    seen: list[Any] = []

    def ask(request: Any) -> bool:
        seen.append(request)
        return True

    for _ in range(3):
        assert run(program, {}, host=host(), consent=ask).ok
    assert len(seen) == 3
    assert seen[0].always_asks and seen[0].risk == "R4" and seen[0].powers == ("Network",)
    assert seen[0].name == "dynamic:test-tool"


def test_credentials_checked_before_the_first_step() -> None:
    creds = [{"id": "github", "purpose": "read issues", "hosts": ["api.github.com"]}]
    m = manifest(
        [cap("c", "tasks.create", {"title": "x"}, "r"), ret(1)], credentialRequirements=creds
    )
    h = host()
    result = go(m, h=h)
    assert code_of(result) == "RUN_CREDENTIAL_MISSING"
    assert "github" in result.error.message and "read issues" in result.error.message
    assert h.calls == [] and result.transitions == 0
    assert go(m, h=host(credentials=["github"])).ok


def test_credential_objects_reach_the_host_unresolved() -> None:
    seen: list[Any] = []

    class Recording(MemoryHost):
        def call(self, capability: str, input: Any, context: Any) -> Any:
            seen.append((capability, input, context))
            return {"status": 200, "headers": {}, "body": "ok"}

    creds = [{"id": "github", "purpose": "api", "hosts": ["api.github.com"]}]
    step = cap(
        "get",
        "net.http",
        {
            "method": "GET",
            "url": "https://api.github.com/x",
            "headers": {"Authorization": {"$credential": "github"}},
        },
        "r",
        target="res",
    )
    m = manifest(
        [step, ret(ref("res.status"))],
        credentialRequirements=creds,
        network={"mode": "allowlist", "hosts": ["api.github.com"]},
    )
    result = go(m, h=Recording(credentials=["github"]))
    assert result.output == 200
    capability, sent, context = seen[0]
    assert capability == "net.http"
    assert sent["headers"] == {"Authorization": {"$credential": "github"}}
    assert context.allowed_hosts == ("api.github.com",)
    assert context.credential_hosts == {"github": ("api.github.com",)}
    assert context.node_id == "get" and context.tool_id == "test-tool"


# --- transitions --------------------------------------------------------------------------------


def chain(n_sets: int, tail: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    nodes = [setn(f"s{i}", "x", i, f"s{i + 1}") for i in range(n_sets)]
    nodes.append(ret(ref("x"), f"s{n_sets}"))
    return nodes


def test_transition_limit_at_the_manifests_bound() -> None:
    assert go(manifest(chain(9), maxTransitions=10)).transitions == 10
    stopped = go(manifest(chain(10), maxTransitions=10))
    assert code_of(stopped) == "RUN_TRANSITION_LIMIT"
    assert stopped.transitions == 10  # a stopped run reports the limit
    assert stopped.error.node == "s10"


def loop_flow(n_sets: int, items: int = 100) -> dict[str, Any]:
    nodes = [
        setn(f"s{i}", "x", i, f"s{i + 1}" if i + 1 < n_sets else "loop") for i in range(n_sets)
    ]
    nodes.append(
        {
            "id": "loop",
            "type": "foreach",
            "source": ref("input.items"),
            "itemVar": "it",
            "maxItems": 100,
            "body": [setn("b1", "y", ref("it"), "b2"), setn("b2", "z", ref("it"), None)],
            "next": "r",
        }
    )
    nodes.append(ret(ref("x")))
    return manifest(nodes, maxTransitions=256)


def test_transition_cap_exact_at_256() -> None:
    items = {"items": list(range(100))}
    ok = go(loop_flow(54), items)  # 54 + foreach 1 + 100 × 2 + return 1 = 256
    assert ok.ok and ok.transitions == 256
    stopped = go(loop_flow(55), items)
    assert code_of(stopped) == "RUN_TRANSITION_LIMIT" and stopped.transitions == 256


def test_the_hard_cap_holds_even_for_a_program_claiming_more() -> None:
    program = lower_dict(manifest(chain(300)))
    program.max_transitions = 1000  # bypasses verify(): the VM caps at 256 regardless
    result = run(program, {}, host=host(), consent=yes)
    assert code_of(result) == "RUN_TRANSITION_LIMIT" and result.transitions == 256


# --- loops ---------------------------------------------------------------------------------------


def each(source: Any, body: list[dict[str, Any]], max_items: int = 5, **kw: Any) -> dict[str, Any]:
    return {
        "id": "loop",
        "type": "foreach",
        "source": source,
        "itemVar": "it",
        "maxItems": max_items,
        "body": body,
        "next": "r",
        **kw,
    }


def test_loop_bound_checked_before_the_first_iteration() -> None:
    body = [cap("mk", "tasks.create", {"title": {"$template": "t{{it}}"}}, None)]
    m = manifest([each(ref("input.items"), body), ret(1)])
    h = host()
    result = go(m, {"items": [1, 2, 3, 4, 5, 6]}, h)
    assert code_of(result) == "RUN_LOOP_BOUND" and result.error.node == "loop"
    assert "6 items" in result.error.message and "maxItems 5" in result.error.message
    assert h.calls == []  # no item silently processed or dropped
    h2 = host()
    assert go(m, {"items": [1, 2, 3, 4, 5]}, h2).ok and len(h2.tasks) == 5


def test_loop_source_must_be_a_list() -> None:
    m = manifest([each(ref("input.items"), [setn("b", "y", 1, None)]), ret(1)])
    result = go(m, {"items": {"a": 1}})
    assert code_of(result) == "RUN_TYPE" and "object" in result.error.message


def test_loop_variables_index_from_zero_and_restore_after_the_loop() -> None:
    body = [setn("b", "acc", {"$template": "{{acc}}{{i}}={{it}};"}, None)]
    nodes = [
        setn("a0", "acc", "", "a1"),
        setn("a1", "it", "outer", "loop"),
        each(ref("input.items"), body, indexVar="i"),
        ret({"acc": ref("acc"), "it": ref("it")}),
    ]
    result = go(manifest(nodes), {"items": ["x", "y"]})
    assert result.output == {"acc": "0=x;1=y;", "it": "outer"}
    assert result.transitions == 2 + 1 + 2 + 1


def test_return_and_fail_inside_a_body_end_the_run() -> None:
    body = [
        iff("chk", "eq", ref("it"), "stop", "out", "next"),
        ret({"found": ref("it")}, "out"),
        setn("next", "seen", ref("it"), None),
    ]
    m = manifest([each(ref("input.items"), body), ret("none")])
    assert go(m, {"items": ["a", "stop", "z"]}).output == {"found": "stop"}
    assert go(m, {"items": ["a"]}).output == "none"


# --- values and comparisons ----------------------------------------------------------------------


def decide(op: str, left: Any, right: Any = None) -> Any:
    m = manifest([iff("c", op, left, right, "t", "f"), ret(True, "t"), ret(False, "f")])
    return go(m, {"n": 1, "f": 1.0, "b": True, "s": "abc", "l": [1, {"a": 2}], "o": {"k": None}})


@pytest.mark.parametrize(
    ("op", "left", "right", "expected"),
    [
        ("eq", {"$ref": "input.n"}, {"$ref": "input.f"}, True),  # 1 == 1.0
        ("eq", {"$ref": "input.b"}, 1, False),  # booleans are not numbers
        ("neq", {"$ref": "input.b"}, 1, True),
        ("eq", {"$ref": "input.l"}, [1.0, {"a": 2}], True),  # deep
        ("eq", {"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # key order does not matter
        ("contains", {"$ref": "input.s"}, "bc", True),
        ("contains", {"$ref": "input.l"}, {"a": 2.0}, True),
        ("contains", {"$ref": "input.o"}, "k", True),
        ("contains", {"$ref": "input.o"}, "z", False),
        ("gt", 2, 1.5, True),
        ("lte", "abc", "abd", True),
        ("gt", "é", "z", True),  # code-point order
        ("truthy", {"$ref": "input.o.k"}, None, False),
        ("truthy", {"$ref": "input.missing.deep"}, None, False),
        ("truthy", [], None, False),
        ("truthy", {"$ref": "input.l"}, None, True),
        ("truthy", 0.0, None, False),
        ("exists", {"$ref": "input.o.k"}, None, True),  # null exists
        ("exists", {"$ref": "input.o.zz"}, None, False),
        ("exists", {"$ref": "nothing"}, None, False),
    ],
)
def test_condition_semantics(op: str, left: Any, right: Any, expected: bool) -> None:
    result = decide(op, left, right)
    assert result.ok, result.error
    assert result.output is expected


@pytest.mark.parametrize(
    ("op", "left", "right"),
    [
        ("gt", 1, "a"),
        ("lt", True, 2),
        ("gte", None, None),
        ("lte", [1], [2]),
        ("contains", 5, 5),
        ("contains", "abc", 1),
    ],
)
def test_comparisons_of_the_wrong_types_are_run_type(op: str, left: Any, right: Any) -> None:
    result = decide(op, left, right)
    assert code_of(result) == "RUN_TYPE" and result.error.node == "c"


def test_missing_reads_are_ref_missing_with_the_step_named() -> None:
    for path, words in [
        ("input.l[5]", "has 2 item(s), no index 5"),
        ("input.s.x", "input.s is a string, not an object"),
        ("ghost", "ghost has no value"),
    ]:
        result = decide("eq", {"$ref": path}, 1)
        assert code_of(result) == "RUN_REF_MISSING"
        assert words in result.error.message, result.error.message


def test_templates_render_json_compactly() -> None:
    text = "{{input.s}}|{{input.n}}|{{input.f}}|{{input.o}}|{{input.b}}|{{input.z}}|{{input.x}}"
    m = manifest([ret({"$template": text})])
    value = {
        "s": "é ✓",
        "n": 3,
        "f": 0.1,
        "o": {"b": 1, "a": [1.5, "é"]},
        "b": False,
        "z": None,
        "x": 1e20,
    }
    assert go(m, value).output == 'é ✓|3|0.1|{"b":1,"a":[1.5,"é"]}|false|null|1e20'


# --- capabilities, retries, results ---------------------------------------------------------------


def test_capability_failure_is_reported_with_the_node() -> None:
    h = host()
    h.fail("tasks.create", message="disk full")
    result = go(manifest([cap("mk", "tasks.create", {"title": "x"}, "r"), ret(1)]), h=h)
    assert code_of(result) == "RUN_CAPABILITY_FAILED"
    assert result.error.node == "mk" and "disk full" in result.error.message


def test_host_rechecks_inputs_at_the_bridge() -> None:
    result = go(manifest([cap("mk", "tasks.create", {"titel": "x"}, "r"), ret(1)]))
    assert code_of(result) == "RUN_CAPABILITY_FAILED" and "titel" in result.error.message


@pytest.mark.parametrize("code", ["RUN_LABEL_DENIED", "RUN_NETWORK_DENIED", "RUN_PRIVACY"])
def test_host_refusals_surface_with_their_code_and_node(code: str) -> None:
    h = host()
    h.fail("tasks.list", code=code, message="refused at the bridge")
    result = go(manifest([cap("ls", "tasks.list", {}, "r"), ret(1)]), h=h)
    assert result.to_json()["error"] == {
        "code": code,
        "message": "tasks.list failed: refused at the bridge",
        "node": "ls",
    }


def test_retry_only_transient_errors_waiting_backoff() -> None:
    m = manifest(
        [
            cap("ls", "tasks.list", {}, "r", target="res", retry={"attempts": 3, "backoffMs": 250}),
            ret(ref("res.items")),
        ]
    )
    h = host()
    h.fail("tasks.list", transient=True, times=2)
    waits: list[float] = []
    result = go(m, h=h, sleep=waits.append)
    assert result.ok and result.output == []
    assert [c.attempt for c in h.calls] == [1, 2, 3]
    assert waits == [0.25, 0.25]
    assert result.transitions == 2  # retries add no transition

    h = host()
    h.fail("tasks.list", transient=True, times=3)
    waits = []
    result = go(m, h=h, sleep=waits.append)
    assert code_of(result) == "RUN_CAPABILITY_FAILED" and "after 3 attempts" in result.error.message
    assert len(h.calls) == 3 and waits == [0.25, 0.25]

    h = host()
    h.fail("tasks.list", transient=False)
    waits = []
    assert code_of(go(m, h=h, sleep=waits.append)) == "RUN_CAPABILITY_FAILED"
    assert len(h.calls) == 1 and waits == []  # permanent errors are not retried


def test_no_retry_without_a_retry_field_and_no_wait_at_zero_backoff() -> None:
    h = host()
    h.fail("tasks.list", transient=True)
    waits: list[float] = []
    assert not go(manifest([cap("ls", "tasks.list", {}, "r"), ret(1)]), h=h, sleep=waits.append).ok
    assert len(h.calls) == 1
    h = host()
    h.fail("tasks.list", transient=True)
    m = manifest([cap("ls", "tasks.list", {}, "r", retry={"attempts": 2, "backoffMs": 0}), ret(1)])
    assert go(m, h=h, sleep=waits.append).ok and waits == []


class BigResult(MemoryHost):
    def __init__(self, size: int) -> None:
        super().__init__(clock=lambda: CLOCK)
        self.size = size

    def call(self, capability: str, input: Any, context: Any) -> Any:
        return {"b": "x" * (self.size - len(b'{"b":""}'))}


def test_result_size_limit_is_256_kib_exactly() -> None:
    m = manifest([cap("big", "tasks.list", {}, "r", target="res"), ret(1)])
    assert go(m, h=BigResult(262_144)).ok
    result = go(m, h=BigResult(262_145))
    assert code_of(result) == "RUN_RESULT_TOO_LARGE" and result.error.node == "big"


class Weird(MemoryHost):
    def call(self, capability: str, input: Any, context: Any) -> Any:
        if input.get("mode") == "boom":
            raise RuntimeError("socket closed")
        return {"when": object()}


def test_a_misbehaving_host_is_a_run_error_not_a_traceback() -> None:
    m = manifest([cap("x", "tasks.list", ref("input"), "r", target="res"), ret(1)])
    assert code_of(go(m, {"mode": "boom"}, h=Weird())) == "RUN_CAPABILITY_FAILED"
    assert code_of(go(m, {}, h=Weird())) == "RUN_CAPABILITY_FAILED"


# --- model steps ----------------------------------------------------------------------------------


def llm(nid: str, nxt: str, **kw: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": "llm",
        "op": "classify",
        "input": ref("input"),
        "target": "ans",
        "next": nxt,
        **kw,
    }


def test_model_gets_effective_requirements_and_privacy_is_honoured() -> None:
    seen: list[Any] = []

    def model(op: str, input: Any, reqs: Any, schema: Any) -> Any:
        seen.append((op, input, dict(reqs), schema))
        return {"label": "bug"}

    schema = {"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}}
    m = manifest(
        [
            llm("cls", "r", requirements={"reasoningEffort": "high"}, outputSchema=schema),
            ret(ref("ans.label")),
        ],
        modelDefaults={"privacy": "local-only", "structuredOutput": True},
    )
    result = go(m, {"text": "x"}, h=host(model=model))
    assert result.output == "bug"
    assert seen == [
        (
            "classify",
            {"text": "x"},
            {"privacy": "local-only", "structuredOutput": True, "reasoningEffort": "high"},
            schema,
        )
    ]
    remote = host(model=model, model_is_local=False)
    refused = go(m, {"text": "x"}, h=remote)
    assert code_of(refused) == "RUN_PRIVACY" and refused.error.node == "cls"


def test_model_failures() -> None:
    schema = {"type": "object", "required": ["label"]}
    m = manifest([llm("cls", "r", outputSchema=schema), ret(ref("ans"))])
    assert code_of(go(m, {})) == "RUN_MODEL_FAILED"  # no model configured
    h = host()
    h.script_model({"nolabel": 1})
    bad = go(m, {}, h=h)
    assert code_of(bad) == "RUN_MODEL_FAILED" and "schema" in bad.error.message
    h.script_model({"label": "ok"})
    assert go(m, {}, h=h).output == {"label": "ok"}


# --- output -----------------------------------------------------------------------------------------


def test_output_schema_and_size() -> None:
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    m = manifest([ret(ref("input"))], outputSchema=schema)
    assert go(m, {"n": 2}).ok
    bad = go(m, {"n": "2"})
    assert code_of(bad) == "RUN_OUTPUT_INVALID" and "output.n must be integer" in bad.error.message
    fits = manifest([ret({"s": "x" * (262_144 - len(b'{"s":""}'))})])
    assert go(fits).ok
    # one byte more is a value over the limit, refused as it is built (SPEC §16); an output
    # over the limit is still refused (tests/test_vm_bounds.py: the whole state returned)
    over = manifest([ret({"s": "x" * (262_145 - len(b'{"s":""}'))})])
    assert code_of(go(over)) == "RUN_VALUE_TOO_LARGE"


# --- compensations ---------------------------------------------------------------------------------


def two_writes_then(last: dict[str, Any]) -> dict[str, Any]:
    comp = {"compensation": "tasks.setStatus"}
    return manifest(
        [
            cap("a", "tasks.create", {"title": "first"}, "b", target="t1", **comp),
            cap("b", "tasks.create", {"title": "second"}, "n", target="t2", **comp),
            cap("n", "notes.create", {"title": "n", "body": "b"}, last["id"]),
            last,
        ]
    )


def test_compensations_run_in_reverse_on_a_fail_node() -> None:
    h = host()
    result = go(
        two_writes_then({"id": "no", "type": "fail", "code": "NOT_TODAY", "message": "nope"}), h=h
    )
    assert result.to_json()["error"] == {"code": "NOT_TODAY", "message": "nope", "node": "no"}
    assert result.to_json()["compensations"] == [
        {"node": "b", "capability": "tasks.create", "status": "undone"},
        {"node": "a", "capability": "tasks.create", "status": "undone"},
    ]
    assert [t["status"] for t in h.tasks.values()] == ["cancelled", "cancelled"]
    assert [c.node for c in h.calls if c.kind == "compensate"] == ["b", "a"]


def test_a_failing_compensation_is_reported_and_the_rest_still_run() -> None:
    h = host()
    h.fail("compensate:tasks.create", message="locked")
    result = go(
        two_writes_then({"id": "no", "type": "fail", "code": "NOT_TODAY", "message": "x"}), h=h
    )
    assert [(c.node, c.status) for c in result.compensations] == [("b", "failed"), ("a", "undone")]
    assert result.compensations[0].message == "locked"
    assert h.tasks["task-1"]["status"] == "cancelled" and h.tasks["task-2"]["status"] == "open"


def test_compensations_run_on_output_failures_too() -> None:
    m = two_writes_then(ret("not an object"))
    m["outputSchema"] = {"type": "object"}
    result = go(m)
    assert code_of(result) == "RUN_OUTPUT_INVALID" and len(result.compensations) == 2


def test_no_compensation_on_success() -> None:
    h = host()
    result = go(two_writes_then(ret(1)), h=h)
    assert result.ok and result.compensations == ()
    assert [t["status"] for t in h.tasks.values()] == ["open", "open"]


def test_set_status_and_note_updates_are_restored() -> None:
    h = host()
    h.tasks["t"] = {
        "id": "t",
        "title": "x",
        "notes": "",
        "due": None,
        "status": "done",
        "createdAt": CLOCK,
        "updatedAt": CLOCK,
    }
    h.notes["n"] = {
        "id": "n",
        "title": "old",
        "body": "old body",
        "createdAt": CLOCK,
        "updatedAt": CLOCK,
    }
    m = manifest(
        [
            cap(
                "st",
                "tasks.setStatus",
                {"id": "t", "status": "open"},
                "up",
                compensation="tasks.setStatus",
            ),
            cap(
                "up", "notes.update", {"id": "n", "body": "new"}, "no", compensation="notes.update"
            ),
            {"id": "no", "type": "fail", "code": "ROLL_BACK", "message": "undo all"},
        ]
    )
    result = go(m, h=h)
    assert [c.status for c in result.compensations] == ["undone", "undone"]
    assert h.tasks["t"]["status"] == "done"
    assert (h.notes["n"]["title"], h.notes["n"]["body"]) == ("old", "old body")


# --- state ------------------------------------------------------------------------------------------

STATE = {
    "fields": {"count": {"type": "integer", "default": 0}, "log": {"type": "string"}},
    "maxBytes": 40,
}


def counter(extra: Any = "") -> dict[str, Any]:
    return manifest(
        [
            setn("inc", "state.count", ref("input.n"), "lg"),
            setn("lg", "state.log", {"$template": "{{state.count}}" + str(extra)}, "r"),
            ret(ref("state")),
        ],
        state=STATE,
    )


def test_state_is_loaded_defaulted_and_saved_on_success() -> None:
    h = host()
    m = manifest([ret(ref("state.count"))], state=STATE)
    assert go(m, h=h).output == 0  # the schema's default
    assert go(counter(), {"n": 5}, h=h).output == {"count": 5, "log": "5"}
    assert h.states["test-tool"] == {"count": 5, "log": "5"}
    assert go(m, h=h).output == 5


def test_state_untouched_after_a_failed_run() -> None:
    h = host()
    h.states["test-tool"] = {"count": 1, "log": "1"}
    m = manifest(
        [
            setn("inc", "state.count", 99, "boom"),
            {"id": "boom", "type": "fail", "code": "NOPE", "message": "x"},
        ],
        state=STATE,
    )
    assert code_of(go(m, h=h)) == "NOPE"
    assert h.states["test-tool"] == {"count": 1, "log": "1"} and h.saved_states == []


def test_state_size_limit() -> None:
    h = host()
    fits = "x" * (40 - len(b'{"count":1,"log":"1"}'))
    assert go(counter(fits), {"n": 1}, h=h).ok
    assert len(orjson.dumps(h.states["test-tool"])) == 40
    result = go(counter(fits + "x"), {"n": 2}, h=h)
    assert code_of(result) == "RUN_STATE_TOO_LARGE" and result.error.node is None
    assert h.states["test-tool"]["count"] == 1


# --- a Program from JSON, and never a traceback -----------------------------------------------------


def test_a_program_loaded_from_json_runs_the_same() -> None:
    m = manifest([each(ref("input.items"), [setn("b", "last", ref("it"), None)]), ret(ref("last"))])
    program = lower_dict(m)
    again = Program.from_json(program.to_bytes())
    assert again.to_bytes() == program.to_bytes()
    a = run(program, {"items": [1, 2]}, host=host(), consent=yes).to_json()
    assert a == run(again, {"items": [1, 2]}, host=host(), consent=yes).to_json()


JSON = json_values(scalars(integers=st.integers(-(2**53), 2**53)), keys=st.text(max_size=4))

PROBE = manifest(
    [
        iff("c1", "gt", ref("input.a"), ref("input.b"), "c2", "c3"),
        iff("c2", "contains", ref("input.a"), ref("input.b"), "loop", "c3"),
        iff("c3", "eq", ref("input.a"), {"x": ref("input.b")}, "loop", "r"),
        each(ref("input.a"), [setn("s", "t", {"$template": "{{it}}{{input.b}}"}, None)]),
        ret({"a": ref("input.a"), "t": {"$template": "{{input}}"}}),
    ]
)


@settings(max_examples=150, deadline=None)
@given(a=JSON, b=JSON)
def test_any_input_gives_a_result_never_a_traceback(a: Any, b: Any) -> None:
    result = run(lower_dict(PROBE), {"a": a, "b": b}, host=host(), consent=yes)
    assert result.status in ("ok", "failed")
    if result.error:
        assert result.error.code.startswith("RUN_") and result.error.node
    orjson.dumps(result.to_json())


def test_host_error_codes_that_are_not_run_codes_are_normalized() -> None:
    h = host()
    h.fail("tasks.list", code="EOF")
    result = go(manifest([cap("ls", "tasks.list", {}, "r"), ret(1)]), h=h)
    assert code_of(result) == "RUN_CAPABILITY_FAILED"


def test_input_schema_defaults_fill_absent_parameters() -> None:
    schema = {
        "type": "object",
        "properties": {"limit": {"type": "integer", "default": 50}, "q": {"type": "string"}},
    }
    m = manifest([ret({"limit": ref("input.limit")})], inputSchema=schema)
    assert go(m, {}).output == {"limit": 50}
    assert go(m, {"limit": 3}).output == {"limit": 3}


def test_the_state_limit_failing_after_the_flow_still_undoes_its_steps() -> None:
    m = manifest(
        [
            cap("mk", "tasks.create", {"title": "x"}, "big", compensation="tasks.setStatus"),
            setn("big", "state.log", "x" * 100, "r"),
            ret(1),
        ],
        state=STATE,
    )
    h = host()
    result = go(m, h=h)
    assert code_of(result) == "RUN_STATE_TOO_LARGE"
    assert [c.status for c in result.compensations] == ["undone"]
    assert h.tasks["task-1"]["status"] == "cancelled" and "test-tool" not in h.states
