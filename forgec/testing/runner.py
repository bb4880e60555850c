"""Running one case (SPEC §22): a fresh in-memory host, the case's mocks and model answers,
the real Program in the real VM, then every expectation compared.

The host of a case is `CaseHost`: a `MemoryHost` seeded from `[case.host]`, behind a layer
that answers mocked steps (one mock per attempt, in order, so retries and compensations are
reached), refuses to let a network or delegation step — or any capability the in-memory host
does not carry out — run without a mock (a test never reaches the network or a model: the case
is an *error*, not a pass), answers model steps only from the case's recorded answers, and
records every call: its node, attempt, input and labels (SPEC §15), which calls were writes or
sends (the case's `effects`), and which (label, sink) pairs the run carried (`flows`).

`run_case(program, case)` is the one function every consumer calls: `forgec test`, the pytest
plugin, paired runs (`--against`), `tools review` and the verdict's witness
(`forgec.store.verdict`). It never raises for anything a case or a Program can do.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import orjson

from forgec.ir.capabilities import BY_NAME
from forgec.runtime import sources_and_sinks
from forgec.runtime.host import CallContext, ForwardingHost, HostError
from forgec.runtime.memory_host import PROVIDED, MemoryHost
from forgec.testing.cases import ANY, RE_PREFIX, Case, Mock

CLOCK = "2026-01-01T09:00:00.000000Z"  # every record a case writes has this time
OUTPUT = sources_and_sinks.OUTPUT


@attrs.frozen
class Call:
    """One capability call the run made (a mocked one too)."""

    node: str
    capability: str
    input: Any
    attempt: int
    labels: tuple[str, ...]
    mocked: bool
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "capability": self.capability,
            "input": self.input,
            "attempt": self.attempt,
            "labels": list(self.labels),
            "mocked": self.mocked,
            "ok": self.ok,
        }


@attrs.frozen
class Effect:
    """A write or a send the run made (or, staged, held back): SPEC §22's effect."""

    node: str
    capability: str
    input: Any
    labels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "capability": self.capability,
            "input": self.input,
            "labels": list(self.labels),
        }


@attrs.frozen
class Failure:
    """One expectation not met: what was expected, what the run did, and where."""

    what: str  # status | error | output | effects | no_effects | compensations | ...
    message: str
    expected: Any = None
    actual: Any = None
    node: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
            "node": self.node,
        }


@attrs.define
class CaseResult:
    """A case's outcome: `pass`, `fail` (an expectation not met) or `error` (the case could
    not run as written: a step with no mock, a model step with no answer)."""

    name: str
    outcome: str
    failures: list[Failure]
    errors: list[str]
    result: Any  # forgec.runtime.RunResult
    effects: list[Effect]
    calls: list[Call]
    trace: list[str]
    flows: set[tuple[str, str]]
    compensation_nodes: list[str]
    elapsed_ms: float
    file: str | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.file,
            "outcome": self.outcome,
            "failures": [f.to_json() for f in self.failures],
            "errors": list(self.errors),
            "run": self.result.to_json() if self.result is not None else None,
            "effects": [e.to_json() for e in self.effects],
            "flows": [{"source": s, "sink": k} for s, k in sorted(self.flows)],
            "transitions": self.result.transitions if self.result is not None else 0,
            "elapsedMs": round(self.elapsed_ms, 3),
        }


def needs_mock_reason(capability: str) -> str | None:
    """Why a call of CAPABILITY cannot run on the in-memory host (None: it can)."""
    row = BY_NAME.get(capability)
    if row is not None and (row.needs_network or row.marks.power == "Network"):
        return "it needs the network, and a test never reaches the network"
    if row is not None and row.marks.power == "Delegate":
        return "it delegates to a model or another persona, and a test never reaches one"
    if capability not in PROVIDED:
        return "the in-memory host does not carry it out"
    return None


class CaseHost(ForwardingHost):
    """The host of one case (see the module doc). `inner` holds the seeded data."""

    def __init__(
        self,
        base: MemoryHost,
        mocks: Iterable[Mock] = (),
        model: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        from forgec.host.models import ReplayProvider

        super().__init__(base)
        self.mocks: dict[str, list[Mock]] = {}
        for mock in mocks:
            self.mocks.setdefault(mock.step, []).append(mock)
        self.mocked_nodes = frozenset(self.mocks)
        self.replay = ReplayProvider(records=list(model), name="the case's model answers")
        self.calls: list[Call] = []
        self.effects: list[Effect] = []
        self.flows: set[tuple[str, str]] = set()
        self.errors: list[str] = []
        self.model_steps = 0

    # the Host protocol

    def call(self, capability: str, input: Any, context: CallContext) -> Any:
        labels = tuple(sorted(context.all_labels()))
        sink = sources_and_sinks.call_sink(capability, input)
        if sink is not None:
            self.flows.update((label, sink) for label in labels)
        node = context.node_id
        mocked = node in self.mocked_nodes
        try:
            if mocked:
                result = self._mocked(node, capability, context)
            else:
                reason = needs_mock_reason(capability)
                if reason is not None:
                    self._error(f"step `{node}` calls {capability} with no [[case.mock]]: {reason}")
                result = super().call(capability, input, context)
        except HostError:
            self.calls.append(Call(node, capability, input, context.attempt, labels, mocked, False))
            raise
        self.calls.append(Call(node, capability, input, context.attempt, labels, mocked, True))
        if sink is not None:
            self.effects.append(Effect(node, capability, input, labels))
        return result

    def _mocked(self, node: str, capability: str, context: CallContext) -> Any:
        queue = self.mocks[node]
        if not queue:
            given = sum(1 for c in self.calls if c.node == node) + 1
            self._error(
                f"step `{node}` was called {given} time(s) (attempt {context.attempt}); the "
                f"case mocks it {given - 1} time(s)"
            )
        mock = queue.pop(0)
        if mock.error is not None:
            raise HostError(
                "RUN_CAPABILITY_FAILED",
                f"{capability}: {mock.message}",
                transient=mock.error == "transient",
            )
        # a copy: nothing the run does to a result reaches the next case's mock
        return orjson.loads(orjson.dumps(mock.result))

    def _error(self, message: str) -> None:
        self.errors.append(message)
        raise HostError("RUN_CAPABILITY_FAILED", f"test error: {message}")

    def model(
        self,
        op: str,
        input: Any,
        requirements: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None,
        context: CallContext,
    ) -> Any:
        self.model_steps += 1
        if self.replay.find(op, input, context.node_id) is None:
            self.errors.append(
                f"model step `{context.node_id}` ({op}) has no [[case.model]] answer: a test "
                "never reaches a model"
            )
            raise HostError("RUN_MODEL_FAILED", "test error: no recorded answer")
        from forgec.host.models import model_answer

        return model_answer(self.replay, op, input, requirements, output_schema, context)

    def has_credential(self, credential_id: str) -> bool:
        return True  # a case never sends one: every step that could is mocked

    def compensate(
        self,
        capability: str,
        step_capability: str,
        step_input: Any,
        step_result: Any,
        context: CallContext,
    ) -> Any:
        node = context.node_id
        if node in self.mocked_nodes:
            # the mocks left for the step answer its undo (an error: the undo fails);
            # with none left, a mocked step changed nothing, so there is nothing to undo
            queue = self.mocks[node]
            if queue:
                mock = queue.pop(0)
                if mock.error is not None:
                    raise HostError("RUN_CAPABILITY_FAILED", f"{capability}: {mock.message}")
                return orjson.loads(orjson.dumps(mock.result))
            return {}
        return super().compensate(capability, step_capability, step_input, step_result, context)


def seeded_host(case: Case, tool_id: str) -> MemoryHost:
    """A fresh in-memory host holding the case's `[case.host]` records and state."""
    host = MemoryHost(clock=lambda: CLOCK)
    seed = case.host
    host.seed(
        tasks=seed.get("tasks", ()),
        notes=seed.get("notes", ()),
        memories=seed.get("memories", ()),
        state={tool_id: seed["state"]} if isinstance(seed.get("state"), dict) else None,
    )
    return host


def run_case(program: Any, case: Case, *, check: bool = True) -> CaseResult:
    """Run CASE on PROGRAM (a `forgec.runtime.Program`) and compare every expectation
    (CHECK=False: run only, as a paired run or a witness does)."""
    from forgec.runtime import run

    started = time.perf_counter()
    host = CaseHost(seeded_host(case, program.id), case.mocks, case.model)
    trace: list[str] = []
    result = run(
        program,
        case.input,
        host=host,
        consent=lambda _request: True,
        sleep=lambda _seconds: None,
        trace=trace,
    )
    flows = set(host.flows)
    if result.ok:
        flows.update((label, OUTPUT) for label in result.output_labels)
    failures = expectations(case, result, host, flows, trace) if check else []
    if check:
        failures += _leftovers(host)
    errors = list(host.errors)
    outcome = "error" if errors else ("fail" if failures else "pass")
    return CaseResult(
        name=case.name,
        outcome=outcome,
        failures=failures,
        errors=errors,
        result=result,
        effects=list(host.effects),
        calls=list(host.calls),
        trace=trace,
        flows=flows,
        compensation_nodes=[c.node for c in result.compensations],
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


def run_input(
    program: Any,
    input: Any,
    *,
    host: Mapping[str, Any] | None = None,
    mocks: Iterable[Mock] = (),
    model: Iterable[Mapping[str, Any]] = (),
) -> CaseResult:
    """Run one input with no expectations (the verdict's witness, a screen's try-out):
    `host` is a `[case.host]` seed, `mocks` and `model` as a case's."""
    case = Case(
        name="input",
        input=input,
        host=dict(host or {}),
        mocks=tuple(mocks),
        model=tuple(dict(m) for m in model),
    )
    return run_case(program, case, check=False)


# --- expectations --------------------------------------------------------------------------


def _leftovers(host: CaseHost) -> list[Failure]:
    out = []
    for node, queue in host.mocks.items():
        if queue:
            out.append(
                Failure(
                    "mocks",
                    f"{len(queue)} mock(s) of step `{node}` were never used: the step was "
                    "called fewer times than the case says",
                    node=node,
                )
            )
    unused = host.replay.unused
    if unused:
        out.append(
            Failure(
                "model",
                f"{len(unused)} model answer(s) were never asked for",
                expected=[dict(r) for r in unused],
            )
        )
    return out


def expectations(
    case: Case,
    result: Any,
    host: CaseHost,
    flows: set[tuple[str, str]],
    trace: list[str] | None = None,
) -> list[Failure]:
    """Every expectation of CASE compared with what the run did. A failure names the node
    the run failed at, else the node it ended at (its `return`)."""
    expect = case.expect
    out: list[Failure] = []
    node = result.error.node if result.error is not None else (trace[-1] if trace else None)
    got_status = result.status
    want_status = expect.get("status")
    if want_status is None and "error" not in expect:
        want_status = "ok"  # a case that says nothing expects the run to succeed
    if want_status is not None and want_status != got_status:
        why = (
            f": {result.error.code} at `{result.error.node}`: {result.error.message}"
            if result.error is not None
            else ""
        )
        out.append(
            Failure(
                "status",
                f"expected status {want_status}, got {got_status}{why}",
                want_status,
                got_status,
                node,
            )
        )
    if "error" in expect:
        got = result.error.code if result.error is not None else None
        if got != expect["error"]:
            out.append(
                Failure(
                    "error",
                    f"expected error {expect['error']}, got {got or 'no error'}",
                    expect["error"],
                    got,
                    node,
                )
            )
    if "output" in expect:
        for where, want, got in match(expect["output"], result.output, "output"):
            out.append(
                Failure(
                    "output",
                    f"{where}: expected {_show(want)}, got {_show(got)}",
                    want,
                    got,
                    node,
                )
            )
    if "effects" in expect:
        out += _effects(expect["effects"], host.effects)
    for name in expect.get("no_effects") or ():
        called = [c for c in host.calls if c.capability == name]
        if called:
            out.append(
                Failure(
                    "no_effects",
                    f"{name} must not be called; step `{called[0].node}` called it",
                    None,
                    called[0].input,
                    called[0].node,
                )
            )
    if "compensations" in expect:
        got_comp = [c.to_json() for c in result.compensations]
        want_comp = list(expect["compensations"])
        if len(got_comp) != len(want_comp):
            out.append(
                Failure(
                    "compensations",
                    f"expected {len(want_comp)} compensation(s), got {len(got_comp)}",
                    want_comp,
                    got_comp,
                )
            )
        else:
            for i, (want, got) in enumerate(zip(want_comp, got_comp, strict=True)):
                for where, w, g in match(want, got, f"compensations[{i}]"):
                    out.append(
                        Failure(
                            "compensations",
                            f"{where}: expected {_show(w)}, got {_show(g)}",
                            w,
                            g,
                            got.get("node"),
                        )
                    )
    transitions = expect.get("transitions")
    if transitions is not None:
        limit = transitions["max"] if isinstance(transitions, dict) else None
        if (limit is not None and result.transitions > limit) or (
            limit is None and result.transitions != transitions
        ):
            said = f"at most {limit}" if limit is not None else str(transitions)
            out.append(
                Failure(
                    "transitions",
                    f"expected {said} transitions, the run took {result.transitions}",
                    transitions,
                    result.transitions,
                )
            )
    for flow in expect.get("flows") or ():
        pair = (flow.get("source"), flow.get("sink"))
        if pair not in flows:
            out.append(
                Failure(
                    "flows",
                    f"expected {pair[0]} to reach {pair[1]}; the run did not carry it there",
                    flow,
                    [{"source": s, "sink": k} for s, k in sorted(flows)],
                )
            )
    for flow in expect.get("not_flows") or ():
        pair = (flow.get("source"), flow.get("sink"))
        if pair in flows:
            out.append(
                Failure(
                    "not_flows",
                    f"{pair[0]} reached {pair[1]}, which the case forbids",
                    flow,
                    flow,
                )
            )
    return out


def _effects(want: list[Any], got: list[Effect]) -> list[Failure]:
    got_json = [{"capability": e.capability, "input": e.input} for e in got]
    if len(want) != len(got):
        return [
            Failure(
                "effects",
                f"expected {len(want)} effect(s), the run made {len(got)}: "
                + (", ".join(f"{e.capability} at `{e.node}`" for e in got) or "none"),
                want,
                got_json,
            )
        ]
    out = []
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        actual = {"capability": g.capability, "input": g.input}
        for where, we, ge in match(w, actual, f"effects[{i}]"):
            out.append(
                Failure(
                    "effects", f"{where}: expected {_show(we)}, got {_show(ge)}", we, ge, g.node
                )
            )
    return out


_MISSING = object()


def match(want: Any, got: Any, where: str) -> list[tuple[str, Any, Any]]:
    """Where GOT differs from WANT: objects match by the keys WANT gives, lists item by item
    (same length), `"<any>"` matches anything present, `"<re:PATTERN>"` a string the pattern
    matches whole; everything else exactly (1 and 1.0 are equal, true and 1 are not)."""
    if isinstance(want, str):
        if want == ANY:
            return [] if got is not _MISSING else [(where, want, None)]
        if want.startswith(RE_PREFIX) and want.endswith(">"):
            pattern = want[len(RE_PREFIX) : -1]
            if isinstance(got, str) and re.fullmatch(pattern, got) is not None:
                return []
            return [(where, want, None if got is _MISSING else got)]
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [(where, want, None if got is _MISSING else got)]
        out = []
        for key, value in want.items():
            out += match(value, got.get(key, _MISSING), f"{where}.{key}")
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [(where, want, None if got is _MISSING else got)]
        out = []
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            out += match(w, g, f"{where}[{i}]")
        return out
    if got is _MISSING:
        return [(where, want, None)]
    if isinstance(want, bool) or isinstance(got, bool):
        same = type(want) is type(got) and want == got
    else:
        same = want == got
    return [] if same else [(where, want, got)]


def _show(value: Any) -> str:
    from forgec.runtime.jsontext import dumps_text

    text = dumps_text(value)
    return text if len(text) <= 200 else text[:199] + "…"


__all__ = [
    "Call",
    "CaseHost",
    "CaseResult",
    "Effect",
    "Failure",
    "match",
    "needs_mock_reason",
    "run_case",
    "run_input",
    "seeded_host",
]
