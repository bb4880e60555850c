"""The bounded VM: runs a `Program` against a `Host` with every rule of SPEC §8.

A run, in order: the input (≤ 64 KiB, valid against `inputSchema`) → consent (the callback sees
the marks; an R4 tool asks every run) → every declared credential present → state loaded →
the code → the output (≤ 256 KiB, valid against `outputSchema`) → state saved (only on
success, ≤ `maxBytes`). Any failure after the first step runs the compensations of completed
steps in reverse order and reports each.

The code runs in one dispatch loop over pre-decoded instructions `(op, operand, node)`: the
operand is decoded once per Program (values into closures, calls into call sites with their
`CallContext`), so the loop does little more than a dict-and-counter Python function would.
Bounds the loop enforces itself, whatever the Program says: every ENTER counts one transition
against `min(maxTransitions, 256)`, and every backward jump counts against the same limit, so
no Program, even a hand-made one, runs unbounded.

Everything that goes out to the host or comes back is plain JSON: host results are normalized
through orjson (that is also how their size is measured), so nothing the host returns can alias
a Program constant or smuggle a non-JSON object into a comparison.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, cast

import attrs
import orjson

from forgec.ir.rules import ALLOWLIST, RUNTIME_CODE_PREFIX
from forgec.runtime import label_trees as lb
from forgec.runtime.host import CallContext, Host, HostError, LabelledHost
from forgec.runtime.limits import INPUT_LIMIT, OUTPUT_LIMIT, RESULT_LIMIT
from forgec.runtime.opcodes import Op
from forgec.runtime.program import Program
from forgec.runtime.sources_and_sinks import (
    DESTINATIONS,
    MODEL,
    ORIGIN_BY_CALL,
    STATE,
    TALON,
    URL_DESTINATIONS,
    origin_labels,
    source_labels,
)
from forgec.runtime.values import (
    MISSING,
    CredentialRef,
    Env,
    RunFailure,
    compile_condition,
    compile_value,
    type_name,
)

# Op numbers as plain ints: the dispatch loop compares ints, not enum members.
_ENTER, _EVAL, _STORE, _POP, _CALL, _MODEL = 1, 2, 3, 4, 5, 6
_COMPARE, _JUMP_IF_FALSE, _JUMP, _FOREACH_INIT, _FOREACH_NEXT, _RETURN, _FAIL = (
    7,
    8,
    9,
    10,
    11,
    12,
    13,
)
assert (_ENTER, _FAIL, _FOREACH_NEXT) == (Op.ENTER, Op.FAIL, Op.FOREACH_NEXT)


@attrs.frozen
class RunError:
    code: str
    message: str
    node: str | None
    line: int | None = None  # where the node was written; shown to people, not in JSON

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "node": self.node}


@attrs.frozen
class CompensationOutcome:
    node: str
    capability: str  # the compensated step's capability
    status: str  # undone | failed
    message: str | None = None  # why it failed; not in the SPEC shape

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "capability": self.capability, "status": self.status}


@attrs.frozen
class RunResult:
    status: str  # ok | failed
    output: Any
    error: RunError | None
    transitions: int
    compensations: tuple[CompensationOutcome, ...] = ()
    state: dict[str, Any] | None = None  # the state saved by a successful run
    elapsed_ms: float = 0.0
    # SPEC §15: the labels of the output (its data and what decided it); for tests and
    # embedders, not in the §8 JSON (a caller of a run sees the output, not its provenance)
    output_labels: tuple[str, ...] = ()
    # SPEC §21: of a failed run, every label the run held when it stopped (what its error
    # message can have been made of): a turn or a session that shows the model the error
    # joins these. Not flows (no sink): the soundness of `output_labels` is unaffected.
    error_labels: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "output": self.output,
            "error": self.error.to_json() if self.error else None,
            "transitions": self.transitions,
            "compensations": [c.to_json() for c in self.compensations],
        }


@attrs.frozen
class ConsentRequest:
    """What a consent callback is shown: who the tool is and what it may do."""

    tool_id: str
    name: str
    version: int
    title: str
    risk: str
    always_asks: bool  # R4: ask every run, never remember the answer
    powers: tuple[str, ...]
    network: tuple[str, ...]
    credentials: tuple[str, ...]
    marks: dict[str, Any]


class ConsentDenied(Exception):
    """Raised by a consent callback to refuse with its own message."""


ConsentCallback = Callable[[ConsentRequest], bool]


def consent_request(program: Program) -> ConsentRequest:
    marks = program.marks
    risk = str(marks.get("risk", "R0"))
    return ConsentRequest(
        tool_id=program.id,
        name=program.name,
        version=program.version,
        title=program.title,
        risk=risk,
        always_asks=bool(marks.get("alwaysAsks")) or risk == "R4",
        powers=tuple(marks.get("powers", ())),
        network=tuple(program.network.get("hosts", ())),
        credentials=tuple(c["id"] for c in program.credentials),
        marks=dict(marks),
    )


def run(
    program: Program,
    input: Any,
    *,
    host: Host,
    consent: ConsentCallback | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    input_labels: Iterable[str] = (),
    allowed_flows: Iterable[str] = (),
    trace: list[str] | None = None,
) -> RunResult:
    """Run `program` on `input` through `host`; never raises for anything a Program or input
    can do. Without a `consent` callback the run is refused (deny by default).

    SPEC §21: `input_labels` join `input`'s own label (a forged tool called in a turn starts
    with the turn's context labels on `input`); `allowed_flows` are the `[flows] deny` rules
    the caller's consent policy allows this run (handed to the host with every call).

    `trace`, when given, receives the id of every node entered, in order (one per transition:
    what `forgec test --coverage` measures)."""
    started = clock()
    runner = _Run(program, host, sleep)
    runner.trace = trace
    if input_labels:
        runner.input_tree = (lb.INPUT_TREE[0] | frozenset(input_labels), None)
    runner.allowed_flows = frozenset(allowed_flows)
    try:
        output = runner.run(input, consent)
    except RunFailure as failure:
        error = RunError(failure.code, failure.message, failure.node, runner.line_of(failure.node))
        return RunResult(
            status="failed",
            output=None,
            error=error,
            transitions=runner.transitions,
            compensations=tuple(runner.compensate()),
            elapsed_ms=(clock() - started) * 1000,
            error_labels=runner.held_labels(),
        )
    return RunResult(
        status="ok",
        output=output,
        error=None,
        transitions=runner.transitions,
        state=runner.state if program.state is not None else None,
        elapsed_ms=(clock() - started) * 1000,
        output_labels=runner.output_labels,
    )


# --- what is compiled once per Program -------------------------------------------------------


@attrs.frozen
class _CallSite:
    node: str
    capability: str
    attempts: int
    backoff_s: float
    compensation: str | None
    context: CallContext
    source: frozenset[str] = frozenset()  # the labels its result carries by its row alone
    # its origin labels depend on the call (`sources_and_sinks.ORIGIN_BY_CALL`)
    by_call: bool = False


@attrs.frozen
class _ModelSite:
    node: str
    op: str
    requirements: dict[str, Any]
    output_schema: dict[str, Any] | None
    context: CallContext


@attrs.frozen
class _Compiled:
    code: list[tuple[int, Any, int]]
    node_ids: list[str]
    # SPEC §15: node index → where an `if`'s control labels end (a node index; _ITER_END or
    # _NEVER for the end of the iteration or of the run), and the loops that may end the run
    joins: dict[int, int]
    exit_loops: frozenset[int]
    # SPEC §15 "Failure is control": node index → the label reads of what its failure may
    # depend on, taken at the node's entry; None: an older Program without the facts, where
    # every value a node evaluates counts
    fail_reads: dict[int, list[lb.LabelFn]] | None


_ITER_END, _NEVER, _LOOP = -1, -2, -3
TALON_LABELS = frozenset({TALON})


def _fixed_destinations(capability: str, desc: Any) -> frozenset[str]:
    """SPEC §21: the URL destinations of a call whose host the checked manifest wrote: a
    template whose literal text before the first placeholder holds the whole authority (up
    to a `/`, `?` or `#`). A constant is fixed too, but carries no labels anyway."""
    urls = URL_DESTINATIONS.get(capability)
    if not urls or not isinstance(desc, (list, tuple)) or desc[0] != "obj":
        return frozenset()
    out = set()
    for key, member in desc[1]:
        if key not in urls or key not in DESTINATIONS.get(capability, ()):
            continue
        if member[0] == "tpl" and member[1] and isinstance(member[1][0], str):
            head = member[1][0]
            scheme, sep, rest = head.partition("://")
            end = min((rest.find(ch) for ch in "/?#" if ch in rest), default=-1)
            # a non-empty authority, ended by the literal text itself (`https:///{{x}}` and a
            # backslash, which URL parsers may read as a slash, do not count)
            if sep and scheme.isalpha() and end > 0 and "\\" not in rest[:end]:
                out.add(key)
    return frozenset(out)


def compiled(program: Program) -> _Compiled:
    """Decode every operand once and keep it on the Program."""
    cached = program.cache.get("vm")
    if cached is not None:
        return cached
    p = program
    node_ids = [n["id"] for n in p.nodes]
    allowed = tuple(p.network.get("hosts", ())) if p.network.get("mode") == ALLOWLIST else ()
    cred_hosts = {c["id"]: tuple(c.get("hosts", ())) for c in p.credentials}
    values = [compile_value(v, p.consts, p.paths) for v in p.values]
    lvalues = [lb.compile_labels(v, p.paths) for v in p.values]
    index_of = {nid: i for i, nid in enumerate(node_ids)}
    flow = p.flow if isinstance(p.flow, dict) else {}
    joins: dict[int, int] = {}
    for nid, join in (flow.get("joins") or {}).items():
        if nid in index_of:
            joins[index_of[nid]] = index_of.get(join, _NEVER) if join is not None else _NEVER
    exit_loops = frozenset(index_of[n] for n in flow.get("exitLoops") or () if n in index_of)
    fail_reads: dict[int, list[lb.LabelFn]] | None = None
    if isinstance(flow.get("mayFail"), dict):
        fail_reads = {
            index_of[nid]: [lb.compile_read(list(path)) for path in paths]
            for nid, paths in flow["mayFail"].items()
            if nid in index_of and paths
        }
    code: list[tuple[int, Any, int]] = []
    for op, arg, node in p.code:
        decoded: Any = arg
        if op == _EVAL:
            desc = p.values[arg]
            single = lb.single_root(desc, p.paths)
            # (value, labels, lenv key or None, its default); a literal's labels are None
            decoded = (
                values[arg],
                None if desc[0] in ("const", "cred") else lvalues[arg],
                single[0] if single else None,
                single[1] if single else None,
            )
        elif op == _STORE:
            path = p.paths[arg]
            in_state = path[0] == "state" and len(path) == 2
            decoded = (True, str(path[1])) if in_state else (False, str(path[0]))
        elif op == _COMPARE:
            decoded = (
                compile_condition(p.conds[arg], p.values, p.consts, p.paths),
                lb.compile_condition_labels(p.conds[arg], p.values, p.paths),
            )
        elif op in (_CALL, _MODEL):
            context = CallContext(
                tool_id=p.id,
                tool_version=p.version,
                node_id=node_ids[node],
                allowed_hosts=allowed,
                credential_hosts=cred_hosts,
            )
            if op == _CALL:
                c = p.calls[arg]
                given = p.code[len(code) - 1] if code else None
                fixed = _fixed_destinations(
                    c["capability"], p.values[given[1]] if given and given[0] == _EVAL else None
                )
                if fixed:
                    context = attrs.evolve(context, fixed_destinations=fixed)
                decoded = _CallSite(
                    node_ids[node],
                    c["capability"],
                    c["attempts"],
                    c["backoffMs"] / 1000,
                    c["compensation"],
                    context,
                    source_labels(c["capability"], None) - TALON_LABELS,
                    c["capability"] in ORIGIN_BY_CALL,
                )
            else:
                m = p.models[arg]
                decoded = _ModelSite(
                    node_ids[node], m["op"], m["requirements"], m.get("outputSchema"), context
                )
        elif op == _FOREACH_INIT:
            loop = p.loops[arg]
            decoded = (loop["itemVar"], loop["indexVar"], loop["maxItems"], node_ids[node])
        elif op == _FAIL:
            decoded = (p.fails[arg]["code"], p.fails[arg]["message"])
        code.append((op, decoded, node))
    result = _Compiled(code, node_ids, joins, exit_loops, fail_reads)
    program.cache["vm"] = result
    return result


def schema_validator(program: Program, key: str, schema: dict[str, Any]) -> Callable[[Any], Any]:
    """A compiled fastjsonschema validator, cached on the Program (imported lazily).

    Only the input's validator fills in `default`s of absent properties: a tool's parameters
    are offered with their defaults, and a flow may rely on them. Outputs and model answers
    are checked, never changed."""
    cache_key = f"schema:{key}"
    validator = program.cache.get(cache_key)
    if validator is None:
        import fastjsonschema

        validator = fastjsonschema.compile(schema, use_default=(key == "input"), use_formats=False)
        program.cache[cache_key] = validator
    return validator


def _validate(
    program: Program, key: str, schema: dict[str, Any], value: Any, what: str
) -> str | None:
    """None when valid, else why not (the validator's message with `data` named `what`)."""
    import fastjsonschema

    try:
        schema_validator(program, key, schema)(value)
    except fastjsonschema.JsonSchemaValueException as exc:
        message = str(exc.message)
        return what + message[4:] if message.startswith("data") else message
    except Exception as exc:  # a schema fastjsonschema cannot compile: refuse, do not crash
        return f"the schema cannot be used: {type(exc).__name__}: {exc}"
    return None


def _bad_default(program: Program, schema: dict[str, Any]) -> str | None:
    """Why a `default` in `schema` breaks its own sub-schema, or None; once per Program."""
    cached = program.cache.get("input-defaults", MISSING)
    if cached is not MISSING:
        return cached
    import fastjsonschema

    problem: str | None = None
    todo: list[tuple[str, Any]] = [("inputSchema", schema)]
    while todo and problem is None:
        where, sub = todo.pop()
        if not isinstance(sub, dict):
            continue
        if "default" in sub:
            try:
                fastjsonschema.compile(sub, use_default=False, use_formats=False)(sub["default"])
            except fastjsonschema.JsonSchemaValueException as exc:
                problem = (
                    f"{where} has a default that does not satisfy its own schema: "
                    f"{str(exc.message).replace('data', 'the default', 1)}"
                )
            except Exception as exc:
                problem = f"{where} cannot be used: {type(exc).__name__}: {exc}"
        for name, prop in (sub.get("properties") or {}).items():
            todo.append((f"{where}.properties.{name}", prop))
        if "items" in sub:
            todo.append((f"{where}.items", sub["items"]))
    program.cache["input-defaults"] = problem
    return problem


def _normalize(
    value: Any, limit: int, code_too_large: str, what: str, code_not_json: str = "RUN_TYPE"
) -> Any:
    """Plain JSON copy of a value, refused over `limit` bytes of compact UTF-8 JSON."""
    try:
        raw = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise RunFailure(code_not_json, f"{what} is not JSON: {exc}") from None
    if len(raw) > limit:
        raise RunFailure(code_too_large, f"{what} is {len(raw)} bytes, over the limit of {limit}")
    return orjson.loads(raw)


def _credential_headers(input: Any) -> dict[str, str]:
    """Header name → credential id for the manifest's own `$credential` header values."""
    headers = input.get("headers") if type(input) is dict else None
    if type(headers) is not dict:
        return {}
    return {
        name: value["$credential"]
        for name, value in headers.items()
        if type(value) is CredentialRef
    }


# --- one run ---------------------------------------------------------------------------------


class _Run:
    def __init__(self, program: Program, host: Host, sleep: Callable[[float], None]) -> None:
        self.program = program
        self.host = host
        self.sleep = sleep
        self.transitions = 0
        self.state: dict[str, Any] = {}
        # completed steps that declared a compensation: (site, input, result)
        self.done: list[tuple[_CallSite, Any, Any]] = []
        self.output_labels: tuple[str, ...] = ()
        self.input_tree: lb.Tree = lb.INPUT_TREE
        self.allowed_flows: frozenset[str] = frozenset()
        # SPEC §15 "Labels persist": the state's labels as loaded (lenv keys `state.X`) and
        # the label env at the end of the code, for the labels saved beside the state
        self.keeps_labels = bool(getattr(host, "keeps_labels", False))
        self.state_trees: lb.LEnv = {}
        self.lenv: lb.LEnv = {}
        self.trace: list[str] | None = None

    def line_of(self, node_id: str | None) -> int | None:
        for node in self.program.nodes:
            if node["id"] == node_id:
                line = node.get("line")
                return line if isinstance(line, int) else None
        return None

    def run(self, input: Any, consent: ConsentCallback | None) -> Any:
        p = self.program
        input = self._check_input(input)
        self._ask_consent(consent)
        for cred in p.credentials:
            try:
                present = bool(self.host.has_credential(cred["id"]))
            except Exception:
                present = False
            if not present:
                purpose = f" ({cred['purpose']})" if cred.get("purpose") else ""
                # a host may say how it is given one (optional: not part of the Host protocol)
                hint = getattr(self.host, "credential_hint", None)
                how = ""
                if hint is not None:
                    try:
                        how = f": {hint(cred['id'])}"
                    except Exception:
                        how = ""
                raise RunFailure(
                    "RUN_CREDENTIAL_MISSING",
                    f"credential {cred['id']!r}{purpose} is not available on this host{how}",
                )
        self.state = self._load_state()
        output = self._execute({"input": input, "state": self.state})
        output = self._check_output(output)
        self._save_state()
        return output

    def _check_input(self, input: Any) -> Any:
        try:
            raw = orjson.dumps(input)
        except (TypeError, orjson.JSONEncodeError) as exc:
            raise RunFailure("RUN_INPUT_INVALID", f"the input is not JSON: {exc}") from None
        if len(raw) > INPUT_LIMIT:
            raise RunFailure(
                "RUN_INPUT_TOO_LARGE",
                f"the input is {len(raw)} bytes, over the limit of {INPUT_LIMIT}",
            )
        input = orjson.loads(raw)
        schema = self.program.input_schema
        if schema is not None:
            # the validator injects `default`s; one that breaks its own schema must not be
            # (the checker refuses such a manifest, but a Program may be hand-made)
            problem = _bad_default(self.program, schema)
            if problem is not None:
                raise RunFailure("RUN_INPUT_INVALID", problem)
            problem = _validate(self.program, "input", schema, input, "input")
            if problem is not None:
                raise RunFailure("RUN_INPUT_INVALID", problem)
        return input

    def _ask_consent(self, consent: ConsentCallback | None) -> None:
        if consent is None:
            raise RunFailure(
                "RUN_CONSENT_DENIED", "no consent callback was given; a run needs consent"
            )
        request = consent_request(self.program)
        try:
            granted = consent(request)
        except ConsentDenied as exc:
            raise RunFailure("RUN_CONSENT_DENIED", str(exc) or "consent was refused") from None
        except Exception as exc:
            raise RunFailure(
                "RUN_CONSENT_DENIED", f"the consent callback failed: {type(exc).__name__}: {exc}"
            ) from None
        if granted is not True:
            raise RunFailure(
                "RUN_CONSENT_DENIED", f"consent to run {self.program.name} was refused"
            )

    def _load_state(self) -> dict[str, Any]:
        decl = self.program.state
        if decl is None:
            return {}
        try:
            loaded = self.host.load_state(self.program.id)
        except HostError as exc:
            raise RunFailure(_host_code(exc, "RUN_CAPABILITY_FAILED"), exc.message) from None
        except Exception as exc:
            raise RunFailure(
                "RUN_CAPABILITY_FAILED", f"the host could not load the state: {exc}"
            ) from None
        state: dict[str, Any] = {}
        if isinstance(loaded, dict):
            try:
                raw = orjson.dumps(loaded)
            except (TypeError, orjson.JSONEncodeError) as exc:
                raise RunFailure(
                    "RUN_STATE_INVALID", f"the stored state is not JSON: {exc}"
                ) from None
            if len(raw) > decl["maxBytes"]:
                # what a run holds stays bounded: state was saved within maxBytes
                raise RunFailure(
                    "RUN_STATE_INVALID",
                    f"the stored state is {len(raw)} bytes, over state.maxBytes {decl['maxBytes']}",
                )
            stored = orjson.loads(raw)
            # a field this version does not declare can be neither read nor written by it;
            # keeping it would persist data no declared schema describes
            state = {k: v for k, v in stored.items() if k in decl["fields"]}
        if self.keeps_labels:
            self.state_trees = self._load_state_labels(state)
        for field, schema in decl["fields"].items():
            if field not in state and isinstance(schema, dict) and "default" in schema:
                state[field] = orjson.loads(orjson.dumps(schema["default"]))
        problem = self._state_problem(state)
        if problem is not None:
            raise RunFailure(
                "RUN_STATE_INVALID",
                f"the state as loaded, with its defaults, is not valid: {problem}",
            )
        return state

    def _load_state_labels(self, state: dict[str, Any]) -> lb.LEnv:
        """The labels saved beside each stored field (with `private:state`)."""
        try:
            stored = cast(LabelledHost, self.host).load_state_labels(self.program.id)
        except HostError as exc:
            raise RunFailure(_host_code(exc, "RUN_CAPABILITY_FAILED"), exc.message) from None
        except Exception as exc:
            raise RunFailure(
                "RUN_CAPABILITY_FAILED", f"the host could not load the state's labels: {exc}"
            ) from None
        trees: lb.LEnv = {}
        if not isinstance(stored, dict):
            return trees
        for field, labels in stored.items():
            if field in state and isinstance(labels, list | tuple):
                extra = frozenset(x for x in labels if type(x) is str)
                trees[f"state.{field}"] = (lb.STATE_TREE[0] | extra, None)
        return trees

    def _state_labels(self) -> dict[str, list[str]]:
        """Each saved field's labels: its value's, as the run left it."""
        return {
            field: sorted(lb.flat(self.lenv.get(f"state.{field}", lb.STATE_TREE)) - {STATE})
            for field in self.state
        }

    def _state_problem(self, state: dict[str, Any]) -> str | None:
        """None when every field satisfies its `state.fields` schema (SPEC §16)."""
        decl = self.program.state
        assert decl is not None
        schema = {"type": "object", "properties": decl["fields"]}
        return _validate(self.program, "state", schema, state, "state")

    def _check_output(self, output: Any) -> Any:
        output = _normalize(output, OUTPUT_LIMIT, "RUN_OUTPUT_TOO_LARGE", "the output")
        schema = self.program.output_schema
        if schema is not None:
            problem = _validate(self.program, "output", schema, output, "output")
            if problem is not None:
                raise RunFailure("RUN_OUTPUT_INVALID", problem)
        return output

    def _save_state(self) -> None:
        decl = self.program.state
        if decl is None:
            return
        problem = self._state_problem(self.state)
        if problem is not None:
            raise RunFailure(
                "RUN_STATE_INVALID", f"the new state is not saved, it is not valid: {problem}"
            )
        raw = orjson.dumps(self.state)
        if len(raw) > decl["maxBytes"]:
            raise RunFailure(
                "RUN_STATE_TOO_LARGE",
                f"the new state is {len(raw)} bytes, over state.maxBytes {decl['maxBytes']}",
            )
        try:
            if self.keeps_labels:
                labels = self._state_labels()
                cast(LabelledHost, self.host).save_state(self.program.id, orjson.loads(raw), labels)
            else:
                self.host.save_state(self.program.id, orjson.loads(raw))
        except HostError as exc:
            raise RunFailure(_host_code(exc, "RUN_CAPABILITY_FAILED"), exc.message) from None
        except Exception as exc:
            raise RunFailure(
                "RUN_CAPABILITY_FAILED", f"the host could not save the state: {exc}"
            ) from None

    # The dispatch loop. Kept in one function with locals for speed; every failure carries
    # the node of the instruction that raised it.
    #
    # Labels (SPEC §15) ride along: `lenv` holds each variable's label tree, `lstack` parallels
    # the value stack, and `controls` holds what makes up `control_labels` — one entry per `if` until
    # its join node is entered (or its iteration / the run ends) and one per running loop.
    # `sticky` keeps what a loop that may end the run decided, for the rest of the run.
    def _execute(self, env: Env) -> Any:
        comp = compiled(self.program)
        code = comp.code
        joins = comp.joins
        exit_loops = comp.exit_loops
        fail_reads = comp.fail_reads
        every = fail_reads is None  # an older Program: every value a node evaluates counts
        limit = self.program.transition_limit
        trace = self.trace
        node_ids = comp.node_ids
        state = env["state"]
        stack: list[Any] = []
        push, pop = stack.append, stack.pop
        lenv: lb.LEnv = {"input": self.input_tree, **self.state_trees}
        # labels an earlier node's failure depends on (SPEC §15 "Failure is control"): taken
        # at the node's entry and from a call's input, they join `sticky` when the next node
        # is entered (the node itself is not decided by its own failure)
        pending: frozenset[str] = lb.NONE
        lstack: list[lb.Tree] = []
        lpush, lpop = lstack.append, lstack.pop
        controls: list[tuple[int, frozenset[str]]] = []
        loops: list[tuple[Any, ...]] = []  # per running loop: source tree, control, saved trees
        sticky: frozenset[str] = lb.NONE
        control_labels: frozenset[str] = lb.NONE  # the control labels in force (SPEC §15)
        transitions = 0
        backs = 0
        ip = 0  # the instruction pointer: the index in `code` of the next instruction
        node = 0
        try:
            while True:
                op, arg, node = code[ip]
                ip += 1
                if op == _ENTER:
                    transitions += 1
                    if transitions > limit:
                        transitions = limit
                        raise RunFailure(
                            "RUN_TRANSITION_LIMIT",
                            f"the run reached its limit of {limit} transitions",
                        )
                    if trace is not None:
                        trace.append(node_ids[node])
                    if controls and controls[-1][0] == node:
                        while controls and controls[-1][0] == node:
                            controls.pop()
                        control_labels = (
                            sticky.union(*[e[1] for e in controls]) if controls else sticky
                        )
                    if pending:
                        if not pending <= sticky:
                            sticky = sticky | pending
                        if not pending <= control_labels:
                            control_labels = control_labels | pending
                        pending = lb.NONE
                    if fail_reads is not None:
                        reads = fail_reads.get(node)
                        if reads is not None:
                            for read in reads:
                                pending = pending | read(lenv)[0]
                elif op == _EVAL:
                    push(arg[0](env))
                    if arg[2] is not None:
                        tree = lenv.get(arg[2], arg[3])
                        lpush(tree if tree[1] is None else arg[1](lenv))
                    elif arg[1] is None:
                        lpush(lb.EMPTY)
                    else:
                        lpush(arg[1](lenv))
                    if every:
                        pending = pending | lb.flat(lstack[-1])
                elif op == _STORE:
                    tree = lpop()
                    if (
                        control_labels and not control_labels <= tree[0]
                    ):  # a subset test allocates nothing
                        tree = (tree[0] | control_labels, tree[1])
                    if arg[0]:
                        # a new state object, so a variable that read `$state` before
                        # keeps the value it read (JSON values never change in place)
                        state = env["state"] = {**state, arg[1]: pop()}
                        lenv["state." + arg[1]] = tree
                    else:
                        env[arg[1]] = pop()
                        lenv[arg[1]] = tree
                elif op == _CALL:
                    given = pop()
                    itree = lpop()
                    result, tree = self._call(arg, given, itree, control_labels)
                    pending = pending | lb.flat(itree)  # the host may refuse what it was given
                    push(result)
                    lpush(tree)
                elif op == _COMPARE:
                    push(arg[0](env))
                    lpush(arg[1](lenv))
                elif op == _JUMP_IF_FALSE:
                    decided = lpop()[0]
                    if not control_labels <= decided:
                        decided = decided | control_labels
                    join = joins.get(node, _NEVER)
                    if join == _NEVER and loops:
                        join = _ITER_END
                    controls.append((join, decided))
                    if loops and loops[-1][0] in exit_loops:
                        sticky = sticky | decided
                    if not decided <= control_labels:
                        control_labels = control_labels | decided
                    if not pop():
                        ip = arg
                elif op == _JUMP:
                    if arg < ip:
                        backs += 1
                        if backs > limit:
                            raise RunFailure(
                                "RUN_TRANSITION_LIMIT",
                                f"the run reached its limit of {limit} loop iterations",
                            )
                    ip = arg
                elif op == _FOREACH_NEXT:
                    if controls and controls[-1][0] == _ITER_END:
                        while controls and controls[-1][0] == _ITER_END:
                            controls.pop()
                        control_labels = sticky.union(*[e[1] for e in controls])
                    it = stack[-1]
                    i = it[1]
                    loop = loops[-1]
                    if i < len(it[0]):
                        env[it[2]] = it[0][i]
                        lenv[it[2]] = lb.item_tree(loop[1], i, loop[2])
                        if it[3] is not None:
                            env[it[3]] = i
                            lenv[it[3]] = (loop[2], None)
                        it[1] = i + 1
                    else:
                        pop()
                        _restore(env, it)
                        loops.pop()
                        _restore_labels(lenv, it, loop)
                        while controls and controls[-1][0] != _LOOP:
                            controls.pop()
                        if controls:
                            controls.pop()
                        control_labels = sticky.union(*[e[1] for e in controls])
                        ip = arg
                elif op == _FOREACH_INIT:
                    it = _foreach_init(env, arg, pop())
                    push(it)
                    source = lpop()
                    control = (
                        source[0] if control_labels <= source[0] else source[0] | control_labels
                    )
                    saved = (lenv.get(it[2]), lenv.get(it[3]) if it[3] else None)
                    loops.append((node, source, control, saved))
                    controls.append((_LOOP, control))
                    if node in exit_loops:
                        sticky = sticky | control
                    if not control <= control_labels:
                        control_labels = control_labels | control
                elif op == _POP:
                    pop()
                    lpop()
                elif op == _MODEL:
                    given = pop()
                    itree = lpop()
                    result, tree = self._model(arg, given, itree, control_labels)
                    pending = pending | lb.flat(itree)  # the answer may miss its schema
                    push(result)
                    lpush(tree)
                elif op == _RETURN:
                    self.output_labels = tuple(sorted(lb.flat(lpop()) | control_labels))
                    return pop()
                elif op == _FAIL:
                    raise RunFailure(arg[0], arg[1])
                else:  # pragma: no cover - verify() refuses unknown ops
                    raise RunFailure("RUN_TYPE", f"unknown op {op}")
        except RunFailure as failure:
            if failure.node is None:
                failure.node = comp.node_ids[node]
            raise
        finally:
            self.transitions = transitions
            self.state = state
            self.lenv = lenv

    def held_labels(self) -> tuple[str, ...]:
        """Every label of every value the run holds (its input's included)."""
        out = set(self.input_tree[0])
        for tree in self.lenv.values():
            out |= lb.flat(tree)
        return tuple(sorted(out))

    def _call(
        self, site: _CallSite, input: Any, tree: lb.Tree, control_labels: frozenset[str]
    ) -> tuple[Any, lb.Tree]:
        credentials = _credential_headers(input)  # before the copy to JSON erases the type
        input = _normalize(input, RESULT_LIMIT, "RUN_CAPABILITY_FAILED", "the step's input")
        c = site.context
        # built directly, not with attrs.evolve: this runs on every call
        context = CallContext(
            c.tool_id,
            c.tool_version,
            c.node_id,
            c.allowed_hosts,
            c.credential_hosts,
            1,
            lb.per_argument(input, tree),
            tuple(sorted(control_labels)) if control_labels else (),
            credential_headers=credentials,
            read_labels=set(),
            fixed_destinations=c.fixed_destinations,
            allowed_flows=self.allowed_flows,
        )
        first = context
        attempt = 1
        while True:
            try:
                result = self.host.call(site.capability, input, context)
                break
            except HostError as exc:
                if exc.transient and attempt < site.attempts:
                    if site.backoff_s > 0:
                        self.sleep(site.backoff_s)
                    attempt += 1
                    context = attrs.evolve(first, attempt=attempt)
                    continue
                tries = f" (after {attempt} attempts)" if attempt > 1 else ""
                raise RunFailure(
                    _host_code(exc, "RUN_CAPABILITY_FAILED"),
                    f"{site.capability} failed{tries}: {exc.message}",
                ) from None
            except Exception as exc:
                raise RunFailure(
                    "RUN_CAPABILITY_FAILED",
                    f"{site.capability} failed: {type(exc).__name__}: {exc}",
                ) from None
        result = _normalize(
            result,
            RESULT_LIMIT,
            "RUN_RESULT_TOO_LARGE",
            f"the result of {site.capability}",
            "RUN_CAPABILITY_FAILED",
        )
        if site.compensation is not None:
            self.done.append((site, input, result))
        source = site.source
        if site.by_call:
            # the row's origin depends on the call: `net.http` by the URL's host, and (SPEC
            # §21 "origin per field") outside text only when the answer holds some
            source = origin_labels(site.capability, input, result)
        stored = context.read_labels  # the labels of the rows the call read (SPEC §15)
        if stored:
            source = source | frozenset(x for x in stored if type(x) is str)
        whole = lb.flat(tree) | source | control_labels
        if context.column_labels:
            return result, lb.column_tree(whole, result, context.column_labels)
        return result, (whole, None)

    def _model(
        self, site: _ModelSite, input: Any, tree: lb.Tree, control_labels: frozenset[str]
    ) -> tuple[Any, lb.Tree]:
        input = _normalize(input, RESULT_LIMIT, "RUN_MODEL_FAILED", "the model step's input")
        context = attrs.evolve(
            site.context,
            labels=lb.per_argument(input, tree),
            control_labels=tuple(sorted(control_labels)),
        )
        try:
            result = self.host.model(
                site.op, input, dict(site.requirements), site.output_schema, context
            )
        except HostError as exc:
            raise RunFailure(_host_code(exc, "RUN_MODEL_FAILED"), exc.message) from None
        except Exception as exc:
            raise RunFailure(
                "RUN_MODEL_FAILED", f"the model step failed: {type(exc).__name__}: {exc}"
            ) from None
        result = _normalize(
            result, RESULT_LIMIT, "RUN_RESULT_TOO_LARGE", "the model's answer", "RUN_MODEL_FAILED"
        )
        if site.output_schema is not None:
            problem = _validate(
                self.program, f"model:{site.node}", site.output_schema, result, "answer"
            )
            if problem is not None:
                raise RunFailure(
                    "RUN_MODEL_FAILED", f"the model's answer does not match the schema: {problem}"
                )
        return result, (lb.flat(tree) | _MODEL_LABEL | control_labels, None)

    def compensate(self) -> list[CompensationOutcome]:
        """Undo the completed steps, last first; each outcome is reported, none raises."""
        outcomes: list[CompensationOutcome] = []
        for site, input, result in reversed(self.done):
            assert site.compensation is not None
            try:
                self.host.compensate(
                    site.compensation, site.capability, input, result, site.context
                )
            except Exception as exc:
                message = exc.message if isinstance(exc, HostError) else str(exc)
                outcomes.append(CompensationOutcome(site.node, site.capability, "failed", message))
            else:
                outcomes.append(CompensationOutcome(site.node, site.capability, "undone"))
        self.done.clear()
        return outcomes


def _foreach_init(env: Env, loop: tuple[str, str | None, int, str], source: Any) -> list[Any]:
    item_var, index_var, max_items, node = loop
    if type(source) is not list:
        raise RunFailure(
            "RUN_TYPE", f"foreach {node!r} needs a list to loop over, got {type_name(source)}"
        )
    if len(source) > max_items:
        raise RunFailure(
            "RUN_LOOP_BOUND",
            f"foreach {node!r} got {len(source)} items, more than its maxItems {max_items}",
        )
    # [items, next index, itemVar, indexVar, saved itemVar, saved indexVar]: the loop
    # variables shadow same-named variables only inside the body
    return [
        source,
        0,
        item_var,
        index_var,
        env.get(item_var, MISSING),
        env.get(index_var, MISSING) if index_var else MISSING,
    ]


def _restore(env: Env, it: list[Any]) -> None:
    for name, saved in ((it[2], it[4]), (it[3], it[5])):
        if name is None:
            continue
        if saved is MISSING:
            env.pop(name, None)
        else:
            env[name] = saved


def _restore_labels(lenv: lb.LEnv, it: list[Any], loop: tuple[Any, ...]) -> None:
    for name, saved in ((it[2], loop[3][0]), (it[3], loop[3][1])):
        if name is None:
            continue
        if saved is None:
            lenv.pop(name, None)
        else:
            lenv[name] = saved


_MODEL_LABEL = frozenset({MODEL})


def _host_code(exc: HostError, default: str) -> str:
    code = exc.code
    return code if isinstance(code, str) and code.startswith(RUNTIME_CODE_PREFIX) else default


__all__ = [
    "ConsentCallback",
    "ConsentDenied",
    "ConsentRequest",
    "RunError",
    "RunResult",
    "consent_request",
    "run",
]
