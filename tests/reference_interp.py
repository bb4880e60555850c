"""Tests only: a tree-walking reference interpreter over the IR, and a tiny IR builder.

The reference interpreter runs a flow straight from its IR nodes, the obvious way: follow
`next`/`then`/`else` by id, loop over a `foreach` body with a Python `for`, count one
transition per node entered. It shares only the value semantics (`forgec.runtime.values`:
truthiness, equality, templates) with the VM; control flow, bounds, retries and compensations
are written again here, independently, so that `tests/test_differential.py` proves the
lowering (layout, jumps, stack discipline) right by comparing the two on generated flows.

`build_ir` turns a well-formed manifest dict into IR nodes without the checker, so backend and
VM tests can build flows by hand; `reference_run` returns the same JSON shape as
`RunResult.to_json()`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from forgec.ir import nodes as ir
from forgec.runtime.host import CallContext, HostError
from forgec.runtime.values import (
    MISSING,
    RunFailure,
    contains,
    json_equal,
    missing_message,
    ordered,
    render,
    resolve,
    truthy,
)

# --- a tiny IR builder (no checks: give it well-formed manifests) -----------------------------

_SEG = re.compile(r"\.([A-Za-z][A-Za-z0-9_]*)|\[(\d+)\]")


def parse_path(text: str) -> tuple[ir.Segment, ...]:
    text = text.strip()
    root = re.match(r"[A-Za-z][A-Za-z0-9_]*", text)
    assert root, text
    segs: list[ir.Segment] = [root.group(0)]
    pos = root.end()
    while pos < len(text):
        m = _SEG.match(text, pos)
        assert m, text
        segs.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return tuple(segs)


def build_value(value: Any, pointer: str = "") -> ir.Value:
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "$ref":
            return ir.Ref(arg, parse_path(arg), pointer)
        if key == "$credential":
            return ir.CredentialRef(arg, pointer)
        if key == "$template":
            parts: list[str | ir.Ref] = []
            for i, piece in enumerate(re.split(r"\{\{(.*?)\}\}", arg)):
                if i % 2:
                    parts.append(ir.Ref(piece.strip(), parse_path(piece), pointer))
                elif piece:
                    parts.append(piece)
            return ir.Template(arg, tuple(parts), pointer)
    if not _has_expr(value):
        return ir.Literal(value, pointer)
    if isinstance(value, dict):
        return ir.ObjectExpr(
            tuple((k, build_value(v, f"{pointer}/{k}")) for k, v in value.items()), pointer
        )
    return ir.ListExpr(
        tuple(build_value(v, f"{pointer}/{i}") for i, v in enumerate(value)), pointer
    )


def _has_expr(value: Any) -> bool:
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in ("$ref", "$template", "$credential"):
            return True
        return any(_has_expr(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_expr(v) for v in value)
    return False


def _reqs(data: dict[str, Any] | None, pointer: str) -> ir.ModelRequirements | None:
    if data is None:
        return None
    return ir.ModelRequirements(
        data.get("structuredOutput"),
        data.get("context"),
        data.get("privacy"),
        data.get("reasoningEffort"),
        pointer,
    )


def build_node(data: dict[str, Any], pointer: str) -> ir.Node:
    t = data["type"]
    nid = data["id"]

    def val(key: str) -> ir.Value | None:
        return build_value(data[key], f"{pointer}/{key}") if key in data else None

    if t == "set":
        return ir.SetNode(nid, pointer, data["target"], val("value"), data.get("next"))
    if t == "capability":
        retry = data.get("retry")
        return ir.CapabilityNode(
            nid,
            pointer,
            data["capability"],
            val("input"),
            data.get("target"),
            ir.Retry(retry["attempts"], retry["backoffMs"], f"{pointer}/retry") if retry else None,
            data.get("compensation"),
            data.get("next"),
        )
    if t == "llm":
        return ir.LlmNode(
            nid,
            pointer,
            data["op"],
            val("input"),
            data["target"],
            _reqs(data.get("requirements"), f"{pointer}/requirements"),
            data.get("outputSchema"),
            data.get("next"),
        )
    if t == "if":
        c = data["condition"]
        cp = f"{pointer}/condition"
        cond = ir.Condition(
            c["op"],
            build_value(c["left"], f"{cp}/left"),
            build_value(c["right"], f"{cp}/right") if "right" in c else None,
            cp,
        )
        return ir.IfNode(nid, pointer, cond, data["then"], data["else"])
    if t == "foreach":
        body = tuple(
            build_node(child, f"{pointer}/body/{i}") for i, child in enumerate(data["body"])
        )
        return ir.ForeachNode(
            nid,
            pointer,
            val("source"),
            data["itemVar"],
            data.get("indexVar"),
            data["maxItems"],
            body,
            data.get("next"),
        )
    if t == "return":
        return ir.ReturnNode(nid, pointer, val("value"))
    if t == "fail":
        return ir.FailNode(nid, pointer, data["code"], data["message"])
    raise ValueError(t)


def build_ir(m: dict[str, Any]) -> ir.Manifest:
    flow = m["flow"]
    net = m.get("network", {"mode": "forbidden"})
    state = m.get("state")
    ui = m.get("ui")
    return ir.Manifest(
        schema=m.get("schema", "talos.local-tool.v1"),
        id=m.get("id", "test-tool"),
        version=m.get("version", 1),
        title=m.get("title", "Test tool"),
        description=m.get("description", "A test tool."),
        created_at=m.get("createdAt"),
        parent_version=m.get("parentVersion"),
        execution="declarative-flow",
        install_scope="device",
        network=ir.Network(net["mode"], tuple(net.get("hosts", ()))),
        credential_requirements=tuple(
            ir.CredentialRequirement(c["id"], c.get("purpose"), tuple(c.get("hosts", ())), "")
            for c in m.get("credentialRequirements", ())
        ),
        model_defaults=_reqs(m.get("modelDefaults"), "/modelDefaults"),
        input_schema=m.get("inputSchema"),
        output_schema=m.get("outputSchema"),
        flow=ir.Flow(
            flow["entry"],
            flow.get("maxTransitions", 256),
            tuple(build_node(n, f"/flow/nodes/{i}") for i, n in enumerate(flow["nodes"])),
        ),
        state=ir.StateDecl(state["fields"], state["maxBytes"]) if state else None,
        triggers=(),
        ui=ir.Ui(
            ui["title"],
            tuple(
                ir.UiValue(v["label"], v["path"], parse_path(v["path"]), f"/ui/values/{i}")
                for i, v in enumerate(ui["values"])
            ),
        )
        if ui
        else None,
    )


# --- the reference interpreter ------------------------------------------------------------------


class _Stop(Exception):
    def __init__(self, code: str, message: str, node: str | None) -> None:
        self.code, self.message, self.node = code, message, node


def reference_run(
    manifest: ir.Manifest, input: Any, host: Any, *, sleep: Any = lambda s: None
) -> dict[str, Any]:
    """Run the IR directly. Consent is taken as given; credentials, input and output
    validation are the VM's (tested on their own), so flows here declare no schemas."""
    assert manifest.flow is not None
    limit = min(manifest.flow.max_transitions or 256, 256)
    top = {n.id: n for n in manifest.flow.nodes}
    env: dict[str, Any] = {"input": orjson.loads(orjson.dumps(input)), "state": {}}
    if manifest.state is not None:
        loaded = host.load_state(manifest.id)
        env["state"] = dict(loaded) if isinstance(loaded, dict) else {}
        for name, schema in manifest.state.fields.items():
            if name not in env["state"] and "default" in schema:
                env["state"][name] = schema["default"]
    counter = {"t": 0}
    done: list[tuple[str, str, str, Any, Any]] = []

    def ctx(node: ir.Node, attempt: int = 1) -> CallContext:
        return CallContext(str(manifest.id), int(manifest.version or 1), node.id, attempt=attempt)

    def ev(value: ir.Value | None) -> Any:
        if isinstance(value, ir.Literal):
            return value.value
        if isinstance(value, ir.Ref):
            got = resolve(env, value.segments)
            if got is MISSING:
                raise RunFailure("RUN_REF_MISSING", missing_message(env, value.segments))
            return got
        if isinstance(value, ir.Template):
            return "".join(p if isinstance(p, str) else render(ev(p)) for p in value.parts)
        if isinstance(value, ir.ObjectExpr):
            return {k: ev(v) for k, v in value.fields}
        if isinstance(value, ir.ListExpr):
            return [ev(v) for v in value.items]
        if isinstance(value, ir.CredentialRef):
            return {"$credential": value.id}
        raise AssertionError(value)

    def test(cond: ir.Condition) -> bool:
        op = cond.op
        if op in ("exists", "truthy") and isinstance(cond.left, ir.Ref):
            got = resolve(env, cond.left.segments)
            if op == "exists":
                return got is not MISSING
            return got is not MISSING and truthy(got)
        left = ev(cond.left)
        if op == "exists":
            return True
        if op == "truthy":
            return truthy(left)
        right = ev(cond.right)
        if op == "eq":
            return json_equal(left, right)
        if op == "neq":
            return not json_equal(left, right)
        if op == "contains":
            return contains(left, right)
        return ordered(str(op), left, right)

    def store(target: str | None, value: Any) -> None:
        assert target
        if target.startswith("state."):
            env["state"] = {**env["state"], target[6:]: value}
        else:
            env[target] = value

    def call(node: ir.CapabilityNode, value: Any) -> Any:
        attempts = node.retry.attempts if node.retry and node.retry.attempts else 1
        backoff = node.retry.backoff_ms if node.retry and node.retry.backoff_ms else 0
        for attempt in range(1, attempts + 1):
            try:
                result = host.call(node.capability, value, ctx(node, attempt))
            except HostError as exc:
                if exc.transient and attempt < attempts:
                    if backoff:
                        sleep(backoff / 1000)
                    continue
                raise RunFailure(exc.code, exc.message) from None
            raw = orjson.dumps(result)
            if len(raw) > 262_144:
                raise RunFailure("RUN_RESULT_TOO_LARGE", "too large")
            result = orjson.loads(raw)
            if node.compensation:
                done.append((node.id, str(node.capability), node.compensation, value, result))
            return result
        raise AssertionError("unreachable")

    def step(node: ir.Node) -> tuple[str, Any] | str | None:
        """Run one node: ("return", v) ends the run, a str is the next id, None ends a body."""
        counter["t"] += 1
        if counter["t"] > limit:
            counter["t"] = limit
            raise RunFailure("RUN_TRANSITION_LIMIT", "limit")
        if isinstance(node, ir.SetNode):
            store(node.target, ev(node.value))
            return node.next
        if isinstance(node, ir.CapabilityNode):
            result = call(node, ev(node.input))
            if node.target:
                store(node.target, result)
            return node.next
        if isinstance(node, ir.LlmNode):
            reqs: dict[str, Any] = {}
            for source in (manifest.model_defaults, node.requirements):
                if source is not None:
                    for key, value in (
                        ("structuredOutput", source.structured_output),
                        ("context", source.context),
                        ("privacy", source.privacy),
                        ("reasoningEffort", source.reasoning_effort),
                    ):
                        if value is not None:
                            reqs[key] = value
            try:
                answer = host.model(node.op, ev(node.input), reqs, node.output_schema, ctx(node))
            except HostError as exc:
                raise RunFailure(exc.code, exc.message) from None
            store(node.target, orjson.loads(orjson.dumps(answer)))
            return node.next
        if isinstance(node, ir.IfNode):
            assert node.condition is not None
            return node.then if test(node.condition) else node.else_
        if isinstance(node, ir.ForeachNode):
            items = ev(node.source)
            if type(items) is not list:
                raise RunFailure("RUN_TYPE", "not a list")
            if len(items) > (node.max_items or 0):
                raise RunFailure("RUN_LOOP_BOUND", "too many")
            saved = {v: env.get(v, MISSING) for v in (node.item_var, node.index_var) if v}
            body = {c.id: c for c in node.body}
            for i, item in enumerate(items):
                env[str(node.item_var)] = item
                if node.index_var:
                    env[node.index_var] = i
                current: str | None = node.body[0].id
                while current is not None:
                    out = walk(body[current])
                    if isinstance(out, tuple):
                        return out
                    current = out
            for name, value in saved.items():
                if value is MISSING:
                    env.pop(name, None)
                else:
                    env[name] = value
            return node.next
        if isinstance(node, ir.ReturnNode):
            return ("return", ev(node.value))
        if isinstance(node, ir.FailNode):
            raise RunFailure(str(node.code), str(node.message))
        raise AssertionError(node)

    def walk(node: ir.Node) -> tuple[str, Any] | str | None:
        try:
            return step(node)
        except RunFailure as failure:
            raise _Stop(failure.code, failure.message, failure.node or node.id) from None

    current: ir.Node = top[str(manifest.flow.entry)]
    try:
        while True:
            out = walk(current)
            if isinstance(out, tuple):
                output = out[1]
                break
            assert out is not None
            current = top[out]
        raw = orjson.dumps(output)
        if len(raw) > 262_144:
            raise _Stop("RUN_OUTPUT_TOO_LARGE", "too large", None)
        if manifest.state is not None:
            # SPEC §16: an invalid state is never persisted (checked here with jsonschema,
            # the VM uses fastjsonschema: two implementations of one rule)
            import jsonschema

            fields = manifest.state.fields
            for name, value in env["state"].items():
                if name in fields and not jsonschema.Draft7Validator(fields[name]).is_valid(value):
                    raise _Stop("RUN_STATE_INVALID", f"state.{name} is not valid", None)
            host.save_state(manifest.id, env["state"])
        return {
            "status": "ok",
            "output": orjson.loads(raw),
            "error": None,
            "transitions": counter["t"],
            "compensations": [],
        }
    except _Stop as stop:
        comps = []
        for node_id, capability, undo, value, result in reversed(done):
            try:
                host.compensate(undo, capability, value, result, CallContext("x", 1, node_id))
                comps.append({"node": node_id, "capability": capability, "status": "undone"})
            except Exception:
                comps.append({"node": node_id, "capability": capability, "status": "failed"})
        return {
            "status": "failed",
            "output": None,
            "error": {"code": stop.code, "message": stop.message, "node": stop.node},
            "transitions": counter["t"],
            "compensations": comps,
        }


# --- helpers for backend/VM tests -------------------------------------------------------------


def manifest(nodes: list[dict[str, Any]], entry: str | None = None, **extra: Any) -> dict[str, Any]:
    """A manifest dict around `nodes` (entry: the first node's id)."""
    flow = {
        "entry": entry or nodes[0]["id"],
        "maxTransitions": extra.pop("maxTransitions", 256),
        "nodes": nodes,
    }
    return {"id": "test-tool", "version": 1, "title": "Test tool", "flow": flow, **extra}


def lower_dict(m: dict[str, Any], marks: Any = None) -> Any:
    from forgec.backend import lower_manifest

    return lower_manifest(build_ir(m), marks=marks)
