"""The verdict (SPEC §23): what can this version do that the version you agreed to could not?

Computed from the two *checked* tools, never from the text of the diff. Each reachable call
(capability step or model step) of a version is summarised as **effect instances**:

- the capability and its operation (the selector's literal, `*` when computed);
- each top-level input field as a **term**: a literal value, or a symbolic value "computed
  from labels L" (what it was built from: the input at a path, a capability's result for a
  given question, a model's answer, saved state, a loop's item...). Terms are hash-consed, so
  two versions that build a field the same way (whatever their node ids and step order) have
  the same term, and a renamed or reordered step is the same effect;
- the **clause**: the conditions under which the run reaches the call along one path (the
  branch outcomes taken, each loop iterating over its source within its `maxItems`, and the
  comparisons that must not fail on the way), as a set of conjuncts;
- the hosts it may reach (the allowlist, for a network step), the data flows into it (§15),
  the model's privacy, and how many times a run can do it (the worst case over paths, loops
  counted `maxItems` times and retries `attempts` times).

A call of the new version is **subsumed** when the old version has an instance of the same
capability and operation, with every field the same term (a numeric `limit` no higher), whose
clause is implied by the new clause (each old conjunct is in the new clause, or is a loop
bound the new one keeps within), whose flows include the new flows, and whose count is no
lower. The proof is per input: two versions that take the same input perform, on the same
host, the old version's effect whenever they perform the new one. Everything that is not
proved is a **gain**, said in one sentence with what the old version did. "No new power" is
said only when there is no gain at all.

Path states are enumerated symbolically in topological order; at a join two paths that differ
only by one branch outcome and hold the same values merge (`c ∧ x ∨ c ∧ ¬x = c`). At most
`MAX_PATHS` states reach a node: beyond it the new version's states merge into one (the common
conjuncts, and a fresh unknown for every value that differs: it equals nothing, so everything
built from it is a gain) and the old version's extra states are dropped (fewer old effects:
more gains). Both keep the verdict sound. Cost: docs/analysis.md ("The verdict").

Witness (§23): inputs built from `inputSchema` (enum values, bounds, defaults) and the inputs
given (the test cases'), run on the in-memory host; where the new version makes a gained call
that the old one, given the same input, does not make, the gain carries that input.

`verdict(old, new, was="v1", inputs=())` is the one public entry; `Verdict.to_json()` is
`{"newPower", "headline", "gains": [{"node", "capability", "what", "was", "sentence",
"witness"}]}`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from forgec.frontend.dsl_format import condition_line, one_line
from forgec.ir import nodes as n
from forgec.ir.rules import NODE_FIELDS
from forgec.render.safe import safe_text
from forgec.runtime import sources_and_sinks as fl
from forgec.runtime.jsontext import dumps_text

NO_NEW_POWER = "No new power: this version can do nothing the version you agreed to could not."
MAX_PATHS = 16  # path states per node (beyond: merged for the new version, dropped for the old)
MAX_GAINS = 40  # gains listed; the rest are counted in the headline
WITNESS_RUNS = 24  # inputs tried for a witness
WITNESS_SECONDS = 0.5  # time for all witness runs (the analysis stays within 2 s with them)
PRIVACY_REACH = ("local-only", "local-preferred", "remote-allowed", None)
WRITES = "\x00writes"  # env key: the writes made so far on this path (a term)
NARROWABLE = frozenset({"limit"})  # integer fields where a lower literal reads less
MAX_HALL_SETS = 64  # unions of neighbourhoods checked in a count matching (beyond: conservative)


@attrs.frozen
class Gain:
    node: str  # the new version's node id ("" for a tool-level gain)
    capability: str  # "channel.send", "model", "trigger", "network", "credential"
    what: str  # "can post to #general"
    was: str  # "v1: #team"
    witness: dict[str, Any] | None = None  # {"input", "from"}

    @property
    def sentence(self) -> str:
        return safe_text(f"{self.what} ({self.was})")

    def to_json(self) -> dict[str, Any]:
        # text a person reads: a control or bidi character in a tool's value is escaped (§14)
        return {
            "node": safe_text(self.node),
            "capability": safe_text(self.capability),
            "what": safe_text(self.what),
            "was": safe_text(self.was),
            "sentence": safe_text(self.sentence),
            "witness": self.witness,
        }


@attrs.frozen
class Verdict:
    new_power: bool
    gains: tuple[Gain, ...]
    was: str  # how the old version is named ("v1")
    more: int = 0  # gains found beyond MAX_GAINS
    at_least: bool = False  # the search stopped early: there may be more

    @property
    def headline(self) -> str:
        if not self.new_power:
            return NO_NEW_POWER
        count = len(self.gains) + self.more
        things = "thing" if count == 1 else "things"
        many = "at least " if self.at_least else ""
        return f"New power: this version can do {many}{count} {things} {self.was} could not."

    def to_json(self) -> dict[str, Any]:
        return {
            "newPower": self.new_power,
            "headline": safe_text(self.headline),
            "gains": [g.to_json() for g in self.gains],
        }


def verdict(
    old: Any,
    new: Any,
    *,
    was: str = "v1",
    inputs: Iterable[Any] = (),
    cases: Iterable[Any] = (),
    witness: bool = True,
) -> Verdict | None:
    """The verdict of NEW against OLD (both `forgec.api.Report`s of checked tools). None when
    OLD is None (a first consent: nothing to compare with). INPUTS: more inputs to try as
    witnesses (e.g. the test cases'). CASES: reserved for the §22 case runner."""
    if old is None:
        return None
    terms = _Terms()
    label = safe_text(was)
    try:
        old_v = _Version.of(old, terms, side="old")
        new_v = _Version.of(new, terms, side="new")
        if old_v is None or new_v is None:
            return Verdict(True, (_unjudged(label),), label)
        compare = _Compare(old_v, new_v, terms, label)
        gains = compare.gains()
        at_least = compare.truncated
    except Exception:  # a comparison that breaks proves nothing: never "No new power", no traceback
        return Verdict(True, (_unjudged(label),), label)
    more = max(0, len(gains) - MAX_GAINS)
    gains = gains[:MAX_GAINS]
    if gains and witness:
        gains = _witnesses(old, new, gains, list(inputs), list(cases))
    return Verdict(bool(gains), tuple(gains), label, more, at_least)


def _unjudged(was: str) -> Gain:
    return Gain("", "tool", "may do what could not be compared step by step", f"{was}: unknown")


# --- terms ---------------------------------------------------------------------------------


class _Terms:
    """Hash-consed symbolic values: each distinct term is one small int."""

    def __init__(self) -> None:
        self.ids: dict[tuple[Any, ...], int] = {}
        self.rows: list[tuple[Any, ...]] = []
        self.values: dict[int, Any] = {}  # literal term → its JSON value
        self.texts: dict[int, str] = {}  # a condition's words, as written
        self.neg: dict[int, int] = {}  # branch conjunct → its opposite
        self.fits: dict[int, tuple[int, int]] = {}  # loop-bound conjunct → (source, maxItems)
        self._lits: dict[int, int] = {}  # id(Literal node) → term
        self._labels: dict[int, frozenset[str]] = {}
        self._origins: dict[int, frozenset[str]] = {}
        self._unknown: dict[int, bool] = {}
        self._shapes: dict[int, int] = {}
        self._covers: dict[tuple[int, int], bool] = {}
        self._fresh = 0

    def mk(self, *row: Any) -> int:
        got = self.ids.get(row)
        if got is None:
            got = len(self.rows)
            self.ids[row] = got
            self.rows.append(row)
        return got

    def lit(self, value: Any) -> int:
        t = self.mk("lit", dumps_text(value))
        self.values.setdefault(t, value)
        return t

    def lit_node(self, node: n.Literal) -> int:
        key = id(node)
        got = self._lits.get(key)
        if got is None:
            got = self._lits[key] = self.lit(node.value)
        return got

    def fresh(self) -> int:
        self._fresh += 1
        return self.mk("fresh", self._fresh)

    def is_lit(self, t: int) -> bool:
        return t in self.values

    def branch(self, cond: int, text: str) -> tuple[int, int]:
        yes, no = self.mk("br", cond, True), self.mk("br", cond, False)
        self.neg[yes], self.neg[no] = no, yes
        self.texts.setdefault(yes, text)
        self.texts.setdefault(no, f"not ({text})")
        return yes, no

    def bound(self, source: int, max_items: int, text: str) -> int:
        t = self.mk("fits", source, max_items)
        self.fits[t] = (source, max_items)
        self.texts.setdefault(t, f"{text} has at most {max_items} items")
        return t

    def get(self, t: int, seg: str | int) -> int:
        row = self.rows[t]
        if row[0] == "lit":
            value = self.values[t]
            if isinstance(seg, str) and isinstance(value, dict) and seg in value:
                return self.lit(value[seg])
            if isinstance(seg, int) and isinstance(value, list) and 0 <= seg < len(value):
                return self.lit(value[seg])
        elif row[0] == "obj" and isinstance(seg, str):
            for key, member in row[1]:
                if key == seg:
                    return int(member)
        elif row[0] == "list" and isinstance(seg, int) and 0 <= seg < len(row[1]):
            return int(row[1][seg])
        return self.mk("get", t, seg)

    def labels(self, t: int) -> frozenset[str]:
        """What the value was computed from, as SPEC §15 labels."""
        got = self._labels.get(t)
        if got is not None:
            return got
        out: set[str] = set()
        todo, seen = [t], set()
        while todo:
            cur = todo.pop()
            if cur in seen:
                continue
            seen.add(cur)
            row = self.rows[cur]
            kind = row[0]
            if kind == "input":
                out.add(fl.INPUT)
            elif kind == "state":
                out.add(fl.STATE)
            elif kind == "model":
                out.add(fl.MODEL)
            elif kind == "result":
                out |= row[4]
            todo.extend(_children(row))
        frozen = frozenset(out)
        self._labels[t] = frozen
        return frozen

    def origin(self, t: int) -> frozenset[str]:
        """What a computed value may depend on: its §15 labels, and the writes this run made
        before each read it comes from (a read after a write can return what was written)."""
        got = self._origins.get(t)
        if got is None:
            got = self._origins[t] = self._origin(t)
        return got

    def _origin(self, t: int) -> frozenset[str]:
        out = set(self.labels(t))
        todo, seen = [t], set()
        while todo:
            cur = todo.pop()
            if cur in seen or cur < 0:
                continue
            seen.add(cur)
            row = self.rows[cur]
            if row[0] == "result" and row[5] >= 0:
                epoch = row[5]
                while epoch >= 0:
                    link = self.rows[epoch]
                    out.add(f"\x00after {link[2]} {link[3]}")
                    epoch = link[1]
            todo.extend(_children(row))
        return frozenset(out)

    def unknown(self, t: int) -> bool:
        """Whether a value holds a fresh unknown (it equals nothing, covers nothing)."""
        got = self._unknown.get(t)
        if got is None:
            got = self._unknown[t] = self._has_unknown(t)
        return got

    def _has_unknown(self, t: int) -> bool:
        todo, seen = [t], set()
        while todo:
            cur = todo.pop()
            if cur in seen or cur < 0:
                continue
            seen.add(cur)
            row = self.rows[cur]
            if row[0] in ("fresh", "undef"):
                return True
            todo.extend(_children(row))
        return False

    def shape(self, t: int) -> int:
        """A value with every computed part blanked: its literals, a template's text, an
        object's keys. Two values of one shape differ only in what they are computed from."""
        got = self._shapes.get(t)
        if got is None:
            got = self._shapes[t] = self._shape(t)
        return got

    def _shape(self, t: int) -> int:
        # hash-consed like the terms: a value built by doubling has a shape of one small int
        row = self.rows[t]
        kind = row[0]
        if t in self.values or kind in ("none", "cred"):
            return t
        if kind == "tmpl":
            parts = tuple(p if isinstance(p, str) else self.shape(p) for p in row[1])
            return self.mk("shape", "tmpl", parts)
        if kind == "obj":
            return self.mk("shape", "obj", tuple((k, self.shape(v)) for k, v in row[1]))
        if kind == "list":
            return self.mk("shape", "list", tuple(self.shape(v) for v in row[1]))
        if self.unknown(t):
            return self.mk("shape", "unknown", t)
        return self.mk("shape", "computed")

    def covers(self, new: int, old: int) -> bool:
        """SPEC §23: NEW is no more than OLD: the same literal, or of the same shape with each
        computed part built from the same or fewer sources (`origin`) as OLD's."""
        if new == old:
            return True
        got = self._covers.get((new, old))
        if got is None:
            got = self._covers[(new, old)] = self._cover(new, old)
        return got

    def _cover(self, new: int, old: int) -> bool:
        a, b = self.rows[new], self.rows[old]
        if new in self.values or old in self.values:
            return False
        if a[0] != b[0] or a[0] in ("none", "cred"):
            if a[0] in ("tmpl", "obj", "list") or b[0] in ("tmpl", "obj", "list"):
                return False
            return self._covers_computed(new, old)
        if a[0] in ("tmpl", "list"):
            return len(a[1]) == len(b[1]) and all(
                (x == y) if isinstance(x, str) or isinstance(y, str) else self.covers(x, y)
                for x, y in zip(a[1], b[1], strict=True)
            )
        if a[0] == "obj":
            return [k for k, _ in a[1]] == [k for k, _ in b[1]] and all(
                self.covers(x, y) for (_, x), (_, y) in zip(a[1], b[1], strict=True)
            )
        return self._covers_computed(new, old)

    def _covers_computed(self, new: int, old: int) -> bool:
        if self.unknown(new) or self.unknown(old):
            return False
        return self.origin(new) <= self.origin(old)

    def spelled(self, t: int, depth: int = 0) -> str:
        """A term as an expression a person can read (`URGENT: {{input.title}}`), for two
        computed values that say the same in words."""
        row = self.rows[t]
        kind = row[0]
        if depth > 6:
            return "…"
        if t in self.values:
            value = self.values[t]
            return _readable(value) if isinstance(value, str) else one_line(value)
        if kind == "input":
            return "input"
        if kind == "state":
            return f"state.{row[1]}"
        if kind == "get":
            return f"{self.spelled(row[1], depth + 1)}.{row[2]}"
        if kind == "tmpl":
            return "".join(
                _readable(p) if isinstance(p, str) else "{{" + self.spelled(p, depth + 1) + "}}"
                for p in row[1]
            )
        if kind in ("item", "index"):
            return f"each {kind} of {self.spelled(row[1], depth + 1)}"
        if kind == "result":
            return f"the result of {row[1]}"
        if kind == "model":
            return f"the model's {row[1]}"
        if kind == "obj":
            inner = ", ".join(f"{k}: {self.spelled(v, depth + 1)}" for k, v in row[1])
            return "{" + inner + "}"
        if kind == "list":
            return "[" + ", ".join(self.spelled(v, depth + 1) for v in row[1]) + "]"
        return "a computed value"

    def words(self, t: int) -> str:
        """A field's value as a person reads it: the literal, or what it is computed from."""
        if t in self.values:
            value = self.values[t]
            return _short(_readable(value) if isinstance(value, str) else one_line(value))
        labels = sorted(x for x in self.labels(t) if not x.startswith("\x00"))
        if not labels:
            return "a computed value"
        return "computed from " + _and([fl.describe_source(x) for x in labels])


def _children(row: tuple[Any, ...]) -> list[int]:
    """The terms a term is made of (its other parts are names and numbers)."""
    kind = row[0]
    if kind in ("get", "item", "index", "typed", "nonempty", "prefix", "completes", "acc"):
        return [row[1]]
    if kind == "after":
        return [row[1]]
    if kind == "result":
        return [row[3]]
    if kind == "model":
        return [row[2]]
    if kind == "loop":
        return [row[1], *(t for _, t in row[4])]
    if kind == "obj":
        return [t for _, t in row[1]]
    if kind == "list":
        return list(row[1])
    if kind == "tmpl":
        return [p for p in row[1] if not isinstance(p, str)]
    if kind == "cond":
        return [x for x in (row[2], row[3]) if x >= 0]
    return []


NEWLINE = "⏎"  # a literal's line break, as a sentence shows it


def _readable(text: str) -> str:
    """A literal as one line a person reads: each line break shown as ⏎ (every other control
    or bidi character is escaped by `safe_text` when the sentence is made)."""
    return safe_text(text.replace("\r\n", "\n").replace("\n", NEWLINE))


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _and(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --- one version: its effect instances ----------------------------------------------------

Clause = frozenset[int]
Env = dict[str, int]


@attrs.frozen
class _Inst:
    node: str
    capability: str
    operation: str
    fields: tuple[tuple[str, int], ...]  # sorted by name
    clause: Clause
    key: tuple[Any, ...]  # capability, operation, the fields but the narrowable ones
    attempts: int = 1
    privacy: str | None = None  # model steps: the effective privacy
    effort: str | None = None


class _Version:
    """The effect instances of one checked tool, with what the comparison needs."""

    def __init__(self, report: Any, terms: _Terms, side: str) -> None:
        self.report = report
        self.ir: n.Manifest = report.ir
        self.facts = report.facts
        self.terms = terms
        self.side = side
        self.insts: list[_Inst] = []
        self.by_node: dict[str, list[_Inst]] = {}
        self.weights: dict[str, int] = {}  # node → attempts (capability) or 1
        self.in_loop: dict[str, n.ForeachNode] = {}
        flow = self.ir.flow
        assert flow is not None
        defaults = self.ir.model_defaults
        self.default_privacy = defaults.privacy if defaults is not None else None
        self.default_effort = defaults.reasoning_effort if defaults is not None else None
        self.flows: dict[str, set[tuple[str, str, str]]] = {}
        for f in getattr(self.facts, "flows", ()) or ():
            self.flows.setdefault(f.node, set()).add((f.source, f.argument, f.via))
        self.hosts = tuple(report.marks.network) if report.marks is not None else ()
        self.catalog = _catalog(report.target)

    @classmethod
    def of(cls, report: Any, terms: _Terms, *, side: str) -> _Version | None:
        ir = getattr(report, "ir", None)
        facts = getattr(report, "facts", None)
        if (
            ir is None
            or facts is None
            or ir.flow is None
            or not report.ok
            or not facts.graph_ok
            or not facts.ordered
        ):
            return None
        version = cls(report, terms, side)
        version.run()
        return version

    # -- the walk ------------------------------------------------------------------------

    def run(self) -> None:
        facts = self.facts
        order = list(facts.topo_order)
        if not order:
            return
        self.scope(order, [(frozenset(), {})])

    def scope(self, order: list[str], start: list[tuple[Clause, Env]]) -> list[tuple[Clause, Env]]:
        """Walk one scope (its reachable nodes in topological order) from START; the states
        that leave it (a node with no successor in the scope that is not return/fail)."""
        nodes = self.facts.nodes_by_id
        incoming: dict[str, list[tuple[Clause, Env]]] = {order[0]: list(start)}
        ends: list[tuple[Clause, Env]] = []
        for node_id in order:
            states = self.merge(incoming.pop(node_id, []))
            if not states:
                continue
            node = nodes[node_id]
            outs = self.step(node, states)
            for succ, out in outs:
                if succ is None:
                    ends.extend(out)
                else:
                    incoming.setdefault(succ, []).extend(out)
        return self.merge(ends)

    def step(
        self, node: n.Node, states: list[tuple[Clause, Env]]
    ) -> list[tuple[str | None, list[tuple[Clause, Env]]]]:
        kind = type(node)
        if kind is n.IfNode:
            return self.if_node(node, states)  # type: ignore[arg-type]
        if kind is n.ReturnNode or kind is n.FailNode:
            return []
        if kind is n.ForeachNode:
            out = self.loop(node, states)  # type: ignore[arg-type]
        else:
            out = [self.simple(node, c, e) for c, e in states]
        return [(getattr(node, "next", None), out)]

    def simple(self, node: n.Node, clause: Clause, env: Env) -> tuple[Clause, Env]:
        if type(node) is n.SetNode:
            assert isinstance(node, n.SetNode)
            value = self.value(node.value, env)
            out = self.store(env, node.target, value)
        elif type(node) is n.CapabilityNode:
            assert isinstance(node, n.CapabilityNode)
            out = self.call(node, clause, env)
        elif type(node) is n.LlmNode:
            assert isinstance(node, n.LlmNode)
            out = self.model(node, clause, env)
        else:
            return clause, env
        target = getattr(node, "target", None)
        if target and target.startswith("state."):
            # saved state outlives the run: what a later run reads is an effect of this one
            self.record(node.id, "state", target, (("value", out[target]),), clause, 1)
        return clause, out

    def store(self, env: Env, target: str | None, value: int) -> Env:
        if target is None:
            return env
        out = dict(env)
        out[target] = value
        return out

    def call(self, node: n.CapabilityNode, clause: Clause, env: Env) -> Env:
        terms = self.terms
        cap = node.capability or "?"
        fields = self.fields(node.input, env)
        spec = self.catalog.get(cap) if self.catalog is not None else None
        name = str(spec.name) if spec is not None else cap
        op = _operation(name, dict(fields), terms)
        attempts = node.retry.attempts if node.retry and node.retry.attempts else 1
        self.record(node.id, name, op, fields, clause, attempts)
        question = terms.mk("obj", fields)
        before = env.get(WRITES, -1)
        if _changes_data(name):
            # what a later read answers depends on the writes before it on this path
            env = self.store(env, WRITES, terms.mk("epoch", before, name, op, question))
        if node.target is None:
            return env
        sources = _sources(node, name, dict(fields), terms)
        result = terms.mk("result", name, op, question, sources, before)
        return self.store(env, node.target, result)

    def model(self, node: n.LlmNode, clause: Clause, env: Env) -> Env:
        terms = self.terms
        given = self.value(node.input, env)
        req = node.requirements
        privacy = req.privacy if req is not None and req.privacy else self.default_privacy
        effort = (
            req.reasoning_effort if req is not None and req.reasoning_effort else None
        ) or self.default_effort
        schema = terms.lit(node.output_schema)
        fields = (("input", given),)
        inst = _Inst(
            node.id,
            "model",
            node.op or "?",
            fields,
            clause,
            ("model", node.op, (("input", terms.shape(given)),), schema),
            1,
            privacy,
            effort,
        )
        self.add(inst)
        return self.store(env, node.target, terms.mk("model", node.op, given, schema))

    def record(
        self,
        node_id: str,
        cap: str,
        op: str,
        fields: tuple[tuple[str, int], ...],
        clause: Clause,
        attempts: int,
    ) -> None:
        key_fields = tuple((k, self.terms.shape(t)) for k, t in fields if k not in NARROWABLE)
        self.add(_Inst(node_id, cap, op, fields, clause, (cap, op, key_fields), attempts))

    def add(self, inst: _Inst) -> None:
        known = self.by_node.setdefault(inst.node, [])
        if inst in known:
            return
        known.append(inst)
        self.insts.append(inst)
        self.weights[inst.node] = inst.attempts

    def if_node(
        self, node: n.IfNode, states: list[tuple[Clause, Env]]
    ) -> list[tuple[str | None, list[tuple[Clause, Env]]]]:
        terms = self.terms
        cond = node.condition
        then: list[tuple[Clause, Env]] = []
        other: list[tuple[Clause, Env]] = []
        text = ""
        if cond is not None:
            from forgec.store.diff import _json

            text = condition_line(_json(cond))
        for clause, env in states:
            if cond is None:
                c = terms.fresh()
            else:
                left = self.value(cond.left, env)
                right = self.value(cond.right, env) if cond.right is not None else -1
                c = terms.mk("cond", cond.op, left, right)
            yes, no = terms.branch(c, text)
            base = clause
            if cond is not None and cond.op in ("contains", "gt", "gte", "lt", "lte"):
                typed = terms.mk("typed", c)
                terms.texts.setdefault(typed, f"{text} can be compared")
                base = base | {typed}
            if no not in base:
                then.append((base | {yes}, env))
            if yes not in base:
                other.append((base | {no}, env))
        return [(node.then, then), (node.else_, other)]

    def loop(
        self, node: n.ForeachNode, states: list[tuple[Clause, Env]]
    ) -> list[tuple[Clause, Env]]:
        terms = self.terms
        facts = self.facts
        body_order = list(facts.body_order.get(node.id, ()))
        written = {
            str(b.target)
            for b in node.body
            if isinstance(b, (n.SetNode, n.CapabilityNode, n.LlmNode)) and b.target
        }
        if any(type(b) is n.CapabilityNode and _changes_data(b.capability) for b in node.body):
            written.add(WRITES)  # an earlier item's writes are what a later read sees
        exits = any(isinstance(b, (n.ReturnNode, n.FailNode)) for b in node.body)
        max_items = node.max_items or 0
        shape = _shape(node)
        out: list[tuple[Clause, Env]] = []
        for b in node.body:
            self.in_loop[b.id] = node
        for clause, env in states:
            source = self.value(node.source, env)
            text = one_line(_ref_json(node.source))
            fits = terms.bound(source, max_items, text)
            env_key = tuple(sorted(env.items()))
            fp = terms.mk("loop", source, max_items, shape, env_key)
            inner: Env = dict(env)
            for var in written:
                inner[var] = terms.mk("acc", fp, var)
            if node.item_var:
                inner[node.item_var] = terms.mk("item", source)
            if node.index_var:
                inner[node.index_var] = terms.mk("index", source)
            body_clause = clause | {fits, terms.mk("nonempty", source)}
            if exits:
                prefix = terms.mk("prefix", fp)
                terms.texts.setdefault(prefix, "no earlier item ended the run")
                body_clause = body_clause | {prefix}
            if body_order:
                self.scope(body_order, [(body_clause, inner)])
            after_clause = clause | {fits}
            if exits:
                done = terms.mk("completes", fp)
                terms.texts.setdefault(done, "the loop before it did not end the run")
                after_clause = after_clause | {done}
            after = dict(env)
            for var in written:
                after[var] = terms.mk("after", fp, var)
            out.append((after_clause, after))
        return out

    # -- values --------------------------------------------------------------------------

    def fields(self, value: n.Value | None, env: Env) -> tuple[tuple[str, int], ...]:
        terms = self.terms
        if type(value) is n.ObjectExpr:
            assert isinstance(value, n.ObjectExpr)
            return tuple(sorted((k, self.value(m, env)) for k, m in value.fields))
        if isinstance(value, n.Literal) and isinstance(value.value, dict):
            return tuple(sorted((k, terms.lit(v)) for k, v in value.value.items()))
        if value is None:
            return ()
        return (("*", self.value(value, env)),)

    def value(self, value: n.Value | None, env: Env) -> int:
        terms = self.terms
        kind = type(value)
        if value is None:
            return terms.mk("none")
        if kind is n.Literal:
            return terms.lit_node(value)  # type: ignore[arg-type]
        if kind is n.Ref:
            return self.ref(value, env)  # type: ignore[arg-type]
        if kind is n.Template:
            assert isinstance(value, n.Template)
            parts = tuple(p if isinstance(p, str) else self.ref(p, env) for p in value.parts)
            if all(isinstance(p, str) for p in parts):
                return terms.lit("".join(str(p) for p in parts))
            return terms.mk("tmpl", parts)
        if kind is n.CredentialRef:
            return terms.mk("cred", value.id)  # type: ignore[union-attr]
        if kind is n.ObjectExpr:
            assert isinstance(value, n.ObjectExpr)
            return terms.mk("obj", tuple((k, self.value(m, env)) for k, m in value.fields))
        if kind is n.ListExpr:
            assert isinstance(value, n.ListExpr)
            return terms.mk("list", tuple(self.value(m, env) for m in value.items))
        return terms.fresh()

    def ref(self, ref: n.Ref, env: Env) -> int:
        terms = self.terms
        segs = ref.segments
        if not segs:
            return terms.fresh()
        root = str(segs[0])
        rest = segs[1:]
        if root == "state" and rest and f"state.{rest[0]}" in env:
            t = env[f"state.{rest[0]}"]
            rest = rest[1:]
        elif root in env:
            t = env[root]
        elif root == "input":
            t = terms.mk("input")
        elif root == "state":
            if rest:
                t = terms.mk("state", str(rest[0]))
                rest = rest[1:]
            else:
                t = terms.mk("state", "*")
        else:
            t = terms.mk("undef", root)
        for seg in rest:
            t = terms.get(t, seg)
        return t

    # -- joins ---------------------------------------------------------------------------

    def merge(self, states: list[tuple[Clause, Env]]) -> list[tuple[Clause, Env]]:
        if len(states) <= 1:
            return states
        groups: dict[tuple[tuple[str, int], ...], list[Clause]] = {}
        envs: dict[tuple[tuple[str, int], ...], Env] = {}
        for clause, env in states:
            key = tuple(sorted(env.items()))
            envs.setdefault(key, env)
            known = groups.setdefault(key, [])
            if clause not in known:
                known.append(clause)
        out: list[tuple[Clause, Env]] = []
        for key, clauses in groups.items():
            for clause in self.complements(clauses):
                out.append((clause, envs[key]))
        if len(out) <= MAX_PATHS:
            return out
        if self.side == "old":
            return out[:MAX_PATHS]  # fewer old effects: more gains, never fewer
        common = frozenset.intersection(*(c for c, _ in out))
        names = {k for _, e in out for k in e}
        joined: Env = {}
        for name in names:
            values = {e.get(name, -1) for _, e in out}
            joined[name] = (
                values.pop() if len(values) == 1 and -1 not in values else self.terms.fresh()
            )
        return [(common, joined)]

    def complements(self, clauses: list[Clause]) -> list[Clause]:
        """`c ∧ x ∨ c ∧ ¬x = c`, until no pair merges (and a clause implied by another's
        weaker form is dropped: `c ∨ c ∧ y = c`)."""
        neg = self.terms.neg
        work = list(clauses)
        changed = True
        while changed and len(work) > 1:
            changed = False
            for i in range(len(work)):
                for j in range(i + 1, len(work)):
                    a, b = work[i], work[j]
                    if a <= b or b <= a:
                        keep = a if a <= b else b
                        work = [w for k, w in enumerate(work) if k not in (i, j)] + [keep]
                        changed = True
                        break
                    diff = a ^ b
                    if len(diff) == 2:
                        x, y = tuple(diff)
                        if neg.get(x) == y:
                            work = [w for k, w in enumerate(work) if k not in (i, j)] + [a & b]
                            changed = True
                            break
                if changed:
                    break
        return work

    # -- counts --------------------------------------------------------------------------

    def most(self, wanted: Callable[[_Inst], bool]) -> int:
        """The most times one run can make a call that WANTED accepts (worst case over paths:
        a loop's body counted `maxItems` times, a retried step `attempts` times)."""
        hit = {
            node: self.weights.get(node, 1)
            for node, insts in self.by_node.items()
            if any(wanted(i) for i in insts)
        }
        if not hit:
            return 0
        return self.longest(list(self.facts.topo_order), hit)

    def longest(self, order: list[str], hit: dict[str, int]) -> int:
        nodes = self.facts.nodes_by_id
        best: dict[str, int] = {}
        for node_id in reversed(order):
            node = nodes[node_id]
            weight = hit.get(node_id, 0)
            if type(node) is n.ForeachNode:
                assert isinstance(node, n.ForeachNode)
                body = list(self.facts.body_order.get(node.id, ()))
                if body:
                    weight += (node.max_items or 0) * self.longest(body, hit)
            after = [best.get(s, 0) for s in n.successors(node) if s in best or s in nodes]
            best[node_id] = weight + max(after, default=0)
        return best.get(order[0], 0) if order else 0


def _catalog(target: str) -> Any:
    from forgec.catalog import get_catalog

    try:
        return get_catalog(target)
    except Exception:  # an unknown target: no capability is known (every step a gain)
        return None


def _sources(node: n.CapabilityNode, name: str, fields: dict[str, int], terms: _Terms) -> Any:
    """The labels a step's result carries by where it comes from (as the flows pass gives
    them: `forgec.passes.flows`), for the words "computed from …"."""
    host = None
    if _networked(name):
        from forgec.passes.network import static_host, url_of

        host = static_host(url_of(node)[0])
    out = set(fl.source_labels(name, host))
    query = fl.QUERY_FIELDS.get(name)
    if query is not None:
        sql = terms.values.get(fields.get(query, -1))
        if any(t in fl.UNTRUSTED_TABLES for t in fl.query_tables(sql)):
            out.add(fl.TALON)
    return frozenset(out)


def _changes_data(name: str | None) -> bool:
    """Whether a call may change what a later call reads (it writes, or sends a message the
    host keeps): from the capability's row."""
    from forgec.ir.capabilities import BY_NAME

    row = BY_NAME.get(name or "")
    return row is None or row.sink is not None or bool(row.stores)


def _operation(name: str, fields: dict[str, int], terms: _Terms) -> str:
    from forgec.ir.capabilities import BY_NAME

    row = BY_NAME.get(name)
    selector = row.selector if row is not None else None
    if selector is None:
        return name
    t = fields.get(selector)
    value = terms.values.get(t) if t is not None else None
    return value if isinstance(value, str) else "*"


def _ref_json(value: Any) -> Any:
    from forgec.store.diff import _json

    return _json(value)


def _shape(loop: n.ForeachNode) -> str:
    """The body of a loop as text, node ids replaced by their place: what it does, whatever
    its ids are called."""
    from forgec.store.diff import _json

    place = {b.id: i for i, b in enumerate(loop.body)}
    rows = []
    for b in loop.body:
        row: list[Any] = [n.node_type(b)]
        for f in NODE_FIELDS[n.node_type(b)]:
            value = getattr(b, f.attr)
            if f.attr in ("next", "then", "else_"):
                row.append(place.get(value, value))
            elif f.kind != "body":
                row.append(_json(value))
        rows.append(row)
    return dumps_text(rows)


# --- the comparison ---------------------------------------------------------------------


class _Compare:
    def __init__(self, old: _Version, new: _Version, terms: _Terms, was: str) -> None:
        self.old, self.new, self.terms, self.was = old, new, terms, was
        self.index: dict[tuple[Any, ...], list[_Inst]] = {}
        for inst in old.insts:
            self.index.setdefault(inst.key, []).append(inst)
        self.old_place = {inst: k for k, inst in enumerate(old.insts)}  # a stable order
        self.new_by_key: dict[tuple[Any, ...], list[_Inst]] = {}
        for inst in new.insts:
            self.new_by_key.setdefault(inst.key, []).append(inst)
        self.staged: dict[_Inst, tuple[list[_Inst], list[_Inst], list[_Inst], list[_Inst]]] = {}
        self.matched: dict[tuple[Any, ...], list[tuple[_Inst, frozenset[_Inst]]]] = {}
        self.closures: dict[tuple[Any, ...], set[frozenset[_Inst]]] = {}
        self.counts_old: dict[tuple[Any, ...], int] = {}
        self.counts_new: dict[tuple[Any, ...], int] = {}
        self.truncated = False  # more calls were left unjudged once enough gains were found

    def gains(self) -> list[Gain]:
        out: list[Gain] = []
        seen: set[tuple[str, str]] = set()

        def add(gain: Gain) -> None:
            key = (gain.node, gain.what)
            if key not in seen:
                seen.add(key)
                out.append(gain)

        for inst in self.new.insts:
            for gain in self.judge(inst):
                add(gain)
            if len(out) > MAX_GAINS * 2:
                self.truncated = True
                break
        for gain in self.tool_level():
            add(gain)
        return out

    # -- one call ------------------------------------------------------------------------

    def stages(self, inst: _Inst) -> tuple[list[_Inst], list[_Inst], list[_Inst], list[_Inst]]:
        """The old instances that could stand for INST, filtered in turn: by fields, by
        clause, by model privacy, by flows. The last list is INST's neighbourhood in the
        count matching (`hall_sets`); each earlier one is what a gain's words compare with."""
        got = self.staged.get(inst)
        if got is None:
            candidates = [o for o in self.index.get(inst.key, ()) if self.fields_ok(inst, o)]
            by_clause = [o for o in candidates if self.implies(inst.clause, o.clause)]
            by_model = [o for o in by_clause if self.model_ok(inst, o)]
            by_flow = [o for o in by_model if self.flows_ok(inst, o)]
            got = self.staged[inst] = (candidates, by_clause, by_model, by_flow)
        return got

    def judge(self, inst: _Inst) -> list[Gain]:
        candidates, by_clause, by_model, by_flow = self.stages(inst)
        if not candidates:
            return self.explain_fields(inst) + self.count_gain(inst, by_kind=True)
        if not by_clause:
            return [self.explain_clause(inst, candidates)]
        if not by_model:
            return [self.explain_model(inst, by_clause[0])]
        if not by_flow:
            return [self.explain_flows(inst, by_model[0])]
        gains = self.count_gain(inst, by_kind=False)
        if self.new.hosts and _networked(inst.capability):
            extra = sorted(set(self.new.hosts) - set(self.old.hosts))
            if extra:
                gains.append(
                    Gain(
                        inst.node,
                        inst.capability,
                        f"can reach {_and(extra)}",
                        f"{self.was}: {_and(list(self.old.hosts)) or 'no host'}",
                    )
                )
        return gains

    def count_gain(self, inst: _Inst, *, by_kind: bool) -> list[Gain]:
        """More calls a run than the old version could make: of the calls that old calls
        stand for (BY_KIND false: the matching of `hall_sets`), or of the same capability and
        operation (when no old call is the same)."""
        if by_kind:
            key: tuple[Any, ...] = ("kind", inst.capability, inst.operation)
            new_times = self.new_most(key, lambda i: _kind(i) == key[1:])
            old_times = self.old_most(key, lambda i: _kind(i) == key[1:])
            if old_times == 0:
                return []  # never made: the field gain says it
        else:
            new_times = old_times = 0
            for calls, olds in self.hall_sets(inst):
                new_times = self.new_most(("by", calls), calls.__contains__)
                old_times = self.old_most(("by", olds), olds.__contains__)
                if new_times > old_times:
                    break
        if new_times <= old_times:
            return []
        return [
            Gain(
                inst.node,
                inst.capability,
                f"can {self.desc(inst)} up to {_times(new_times)} a run",
                f"{self.was}: {_times(old_times)}",
            )
        ]

    def hall_sets(self, inst: _Inst) -> list[tuple[frozenset[_Inst], frozenset[_Inst]]]:
        """The count comparisons that decide whether INST's calls fit in the old version's.

        The new calls of INST's key must be assigned to old calls that stand for them (each
        new call to an old call of its neighbourhood, `stages`), each old call used at most as
        many times as a run can make it: a bipartite matching with capacities. Its Hall
        condition: for every set S of new calls, the most times a run makes calls of S is no
        more than the most times a run of the old version makes calls of N(S), the union of
        their neighbourhoods. N(S) is always a union of neighbourhoods, and the largest S for
        a union T is {s : N(s) ⊆ T}; so checking each T in the closure of the neighbourhoods
        under union (with its largest S) checks every S. Comparing each new call with its own
        neighbourhood alone is wrong both ways (issue 31: `limit: 1` then `limit: 2`, renamed,
        matched both new calls to the old `limit: 2` call and counted two calls against one).

        The closure has one set per distinct neighbourhood when they nest (a `limit` ladder),
        at most 2^k for k neighbourhoods otherwise; past `MAX_HALL_SETS` the one comparison
        left is every new call of the key against INST's own neighbourhood (it implies each
        Hall inequality that holds for a set containing INST: more gains, never fewer). The
        pairs returned are those whose S contains INST."""
        group = self.matched.get(inst.key)
        if group is None:
            group = [(i, frozenset(self.stages(i)[3])) for i in self.new_by_key[inst.key]]
            group = [(i, olds) for i, olds in group if olds]
            self.matched[inst.key] = group
        closure = self.closures.get(inst.key)
        if closure is None:
            hoods = {olds for _, olds in group}
            closure = set(hoods)
            frontier = set(hoods)
            while frontier and len(closure) <= MAX_HALL_SETS:
                grown = {a | b for a in frontier for b in hoods} - closure
                closure |= grown
                frontier = grown
            if len(closure) > MAX_HALL_SETS:
                closure = set()
            self.closures[inst.key] = closure
        if not closure:
            mine = frozenset(self.stages(inst)[3])
            return [(frozenset(i for i, _ in group), mine)]
        out = []
        place = self.old_place
        for union in sorted(closure, key=lambda u: (len(u), sorted(place[o] for o in u))):
            calls = frozenset(i for i, olds in group if olds <= union)
            if inst in calls:
                out.append((calls, union))
        return out

    def new_most(self, key: tuple[Any, ...], wanted: Callable[[_Inst], bool]) -> int:
        got = self.counts_new.get(key)
        if got is None:
            got = self.counts_new[key] = self.new.most(wanted)
        return got

    def old_most(self, key: tuple[Any, ...], wanted: Callable[[_Inst], bool]) -> int:
        got = self.counts_old.get(key)
        if got is None:
            got = self.counts_old[key] = self.old.most(wanted)
        return got

    def fields_ok(self, new: _Inst, old: _Inst) -> bool:
        if new.fields == old.fields:
            return True
        a, b = dict(new.fields), dict(old.fields)
        if a.keys() != b.keys():
            return False
        values = self.terms.values
        for k, t in a.items():
            if t == b[k]:
                continue
            x, y = values.get(t), values.get(b[k])
            lower = isinstance(x, int) and isinstance(y, int) and x <= y
            if k in NARROWABLE and lower and _is_int(x) and _is_int(y):
                continue
            if not self.terms.covers(t, b[k]):
                return False
        return True

    def implies(self, new: Clause, old: Clause) -> bool:
        """Whenever the new clause holds, the old one does (conjunct by conjunct: the same
        conjunct, a loop bound the new one keeps within, or the same test on values built from
        the same or fewer sources, `_Terms.covers`)."""
        rest = old - new
        if not rest:
            return True
        return all(any(self.conjunct(y, x) for y in new) for x in rest)

    def conjunct(self, new: int, old: int) -> bool:
        """Whether conjunct NEW implies conjunct OLD."""
        terms = self.terms
        if new == old:
            return True
        a, b = terms.rows[new], terms.rows[old]
        if a[0] != b[0]:
            return False
        if a[0] == "fits":
            return a[2] <= b[2] and terms.covers(a[1], b[1])
        if a[0] == "nonempty":
            return terms.covers(a[1], b[1])
        if a[0] == "br":
            return a[2] == b[2] and self.same_test(a[1], b[1])
        if a[0] == "typed":
            return self.same_test(a[1], b[1])
        return False

    def same_test(self, new: int, old: int) -> bool:
        a, b = self.terms.rows[new], self.terms.rows[old]
        if a[0] != "cond" or b[0] != "cond" or a[1] != b[1]:
            return False
        if (a[3] < 0) != (b[3] < 0):
            return False
        return self.terms.covers(a[2], b[2]) and (a[3] < 0 or self.terms.covers(a[3], b[3]))

    def model_ok(self, new: _Inst, old: _Inst) -> bool:
        if new.capability != "model":
            return True
        return _rank(PRIVACY_REACH, new.privacy) <= _rank(PRIVACY_REACH, old.privacy)

    def flows_ok(self, new: _Inst, old: _Inst) -> bool:
        mine = self.new.flows.get(new.node, set())
        theirs = self.old.flows.get(old.node, set())
        for source, argument, via in mine:
            if (source, argument, via) in theirs or (source, "*", via) in theirs:
                continue
            if via == "control" and any(s == source and v == "data" for s, _, v in theirs):
                continue
            return False
        return True

    # -- words ---------------------------------------------------------------------------

    def desc(self, inst: _Inst) -> str:
        """What the call does, in a few words ("post to #general")."""
        f = dict(inst.fields)
        cap = inst.capability
        said = self.phrase(cap, "", f)
        if said is not None:
            return said
        if cap == "model":
            return f"ask a model to {inst.operation}"
        if cap == "state":
            return f"save {inst.operation}"
        if inst.operation not in (cap, "*"):
            return f"call {cap} {inst.operation}"
        return f"call {cap}"

    def phrase(self, cap: str, key: str, fields: dict[str, int], **more: str) -> str | None:
        """The row's review words KEY for a call of CAP, each `{field}` filled with that
        field's value (None: no such words, or a field they name is missing)."""
        row = _row(cap)
        text = row.review_words.get(key) if row is not None else None
        if text is None:
            return None
        for name, value in more.items():
            text = text.replace("{" + name + "}", value)
        for name in re.findall(r"\{(\w+)\}", text):
            if name not in fields:
                return None
            text = text.replace("{" + name + "}", self.place(cap, fields[name]))
        return text

    def place(self, cap: str, t: int) -> str:
        """A destination's value as a person names it (`#team`; a channel computed from …)."""
        row = _row(cap)
        review = row.review_words if row is not None else {}
        value = self.terms.values.get(t)
        if isinstance(value, str):
            mark = review.get("#", "")
            return value if not mark or value.startswith(mark) else f"{mark}{value}"
        noun = review.get("?")
        return f"{noun} {self.terms.words(t)}" if noun else self.terms.words(t)

    def explain_fields(self, inst: _Inst) -> list[Gain]:
        cap, was = inst.capability, self.was
        same_cap = [o for o in self.old.insts if o.capability == cap]
        if not same_cap:
            return [Gain(inst.node, cap, self.first_use(inst), f"{was}: {self.never(inst)}")]
        same_op = [o for o in same_cap if o.operation == inst.operation or o.operation == "*"]
        if not same_op:
            ops = sorted({o.operation for o in same_cap})
            return [
                Gain(
                    inst.node,
                    cap,
                    f"can {self.desc(inst)}",
                    f"{was}: only {_and([f'`{o}`' for o in ops])}",
                )
            ]
        # every field that differs from every old call of this kind
        mine = dict(inst.fields)
        values = self.terms.values
        out: list[Gain] = []
        same: list[Gain] = []  # a field that says the same in words: the change is upstream
        names = [k for k, _ in inst.fields]
        names += sorted({k for o in same_op for k, _ in o.fields} - mine.keys())
        for name in names:
            olds = [x for x in (dict(o.fields).get(name) for o in same_op) if x is not None]
            t = mine.get(name)
            if t is not None and t in olds:
                continue
            if t is None and len(olds) < len(same_op):
                continue  # some old call left it out too
            v = values.get(t) if t is not None else None
            if (
                name in NARROWABLE
                and _is_int(v)
                and any(_is_int(values.get(x)) and v <= values[x] for x in olds)
            ):
                continue
            if t is not None and self.terms.words(t) in {self.terms.words(x) for x in olds}:
                spelled = _short(self.terms.spelled(t))
                near = [o for o in same_op if o.node == inst.node] or same_op
                shown = [x for x in (dict(o.fields).get(name) for o in near) if x is not None]
                before = sorted({_short(self.terms.spelled(x)) for x in shown} - {spelled})
                same.append(
                    Gain(
                        inst.node,
                        cap,
                        f"can {self.desc(inst)} with {name} `{spelled}`",
                        f"{was}: " + (_and([f"`{b}`" for b in before]) or "built another way"),
                    )
                )
                continue
            out.append(self.field_gain(inst, name, t, olds))
        if not out:
            out = same[:1]
        if not out:
            out.append(
                Gain(
                    inst.node,
                    cap,
                    f"can {self.desc(inst)} with another combination of inputs",
                    f"{was}: each of them, but not together",
                )
            )
        return out

    def field_gain(self, inst: _Inst, name: str, t: int | None, olds: list[int]) -> Gain:
        words = self.terms.words
        cap = inst.capability
        shown_old = _and(
            sorted({_tick(words(x), isinstance(self.terms.values.get(x), str)) for x in olds})
        )
        was = f"{self.was}: {shown_old or 'left it out'}"
        if t is None:
            return Gain(inst.node, cap, f"can {self.desc(inst)} without `{name}`", was)
        new_words = _tick(words(t), isinstance(self.terms.values.get(t), str))
        row = _row(cap)
        phrase = row.review_words.get(name) if row is not None else None
        if phrase is not None and "{}" in phrase:
            if name in row.destinations and "#" in row.review_words:  # a named place: #team
                olds_shown = _and(sorted({self.place(cap, x) for x in olds}))
                return Gain(
                    inst.node,
                    cap,
                    phrase.replace("{}", self.place(cap, t)),
                    f"{self.was}: {olds_shown}",
                )
            shown = new_words if name in row.destinations else words(t)
            return Gain(inst.node, cap, phrase.replace("{}", shown), was)
        if name == fl.QUERY_FIELDS.get(cap):
            return Gain(inst.node, cap, f"runs another SQL query: {new_words}", was)
        if name == "status":
            return Gain(inst.node, cap, f"can set a task's status to {new_words}", was)
        if name in NARROWABLE:
            return Gain(inst.node, cap, f"can {self.desc(inst)} with {name} {new_words}", was)
        if name == "*":
            return Gain(inst.node, cap, f"can {self.desc(inst)} with input {new_words}", was)
        return Gain(inst.node, cap, f"can {self.desc(inst)} with {name} {new_words}", was)

    def first_use(self, inst: _Inst) -> str:
        cap = inst.capability
        f = dict(inst.fields)
        if cap == "model":
            return f"can ask a model to {inst.operation} {self.terms.words(f['input'])}"
        sent = self.new.flows.get(inst.node, set())
        private = sorted({s for s, _, _ in sent if fl.is_private(s)})
        data = _and([fl.describe_source(s) for s in private])
        if _networked(cap):
            where = _and(list(self.new.hosts)) or "the web"
            return f"sends {data} to {where}" if private else f"can send requests to {where}"
        sends = self.phrase(cap, "sends", f, data=data) if private else None
        if sends is not None:
            return sends
        if cap in fl.EGRESS_CAPABILITIES and private:
            return f"can {self.desc(inst)}, sending {data}"
        return f"can {self.desc(inst)}"

    def never(self, inst: _Inst) -> str:
        cap = inst.capability
        if cap == "model":
            return "no model step"
        if cap == "state":
            return f"never saved {inst.operation}"
        if _leaves_device(cap) and not any(_leaves_device(o.capability) for o in self.old.insts):
            return "nothing left the device"
        return f"never called {cap}"

    def explain_clause(self, inst: _Inst, olds: list[_Inst]) -> Gain:
        texts = self.terms.texts
        old = olds[0]
        missing = [texts.get(c, "a condition") for c in sorted(old.clause - inst.clause)]
        bounds = [
            texts[c]
            for c in sorted(old.clause - inst.clause)
            if c in self.terms.fits and c in texts
        ]
        if bounds and len(bounds) == len(missing):
            key = inst.key
            new_times = self.new_most(key, lambda i: i.key == key)
            old_times = self.old_most(key, lambda i: i.key == key)
            if new_times > old_times:
                return Gain(
                    inst.node,
                    inst.capability,
                    f"can {self.desc(inst)} up to {_times(new_times)} a run",
                    f"{self.was}: {_times(old_times)}",
                )
            mine = [texts[c] for c in sorted(inst.clause) if c in self.terms.fits and c in texts]
            return Gain(
                inst.node,
                inst.capability,
                f"can {self.desc(inst)} for more items ({_and(mine) or 'any number'})",
                f"{self.was}: only when {_and(bounds)}",
            )
        return Gain(
            inst.node,
            inst.capability,
            f"can {self.desc(inst)} in more runs",
            f"{self.was}: only when {_and(missing)}",
        )

    def explain_model(self, inst: _Inst, old: _Inst) -> Gain:
        return Gain(
            inst.node,
            "model",
            f"may send {self.terms.words(dict(inst.fields)['input'])} to "
            f"{_privacy_words(inst.privacy)}",
            f"{self.was}: {_privacy_words(old.privacy)}",
        )

    def explain_flows(self, inst: _Inst, old: _Inst) -> Gain:
        mine = self.new.flows.get(inst.node, set())
        theirs = self.old.flows.get(old.node, set())
        fresh = sorted({s for s, a, v in mine if (s, a, v) not in theirs})
        before = sorted({s for s, _, _ in theirs})
        return Gain(
            inst.node,
            inst.capability,
            f"{self.desc(inst)} now carries {_and([fl.describe_source(s) for s in fresh])}",
            f"{self.was}: "
            + (_and([fl.describe_source(s) for s in before]) if before else "no labelled data"),
        )

    # -- the tool as a whole ---------------------------------------------------------------

    def tool_level(self) -> list[Gain]:
        out: list[Gain] = []
        old_ir, new_ir = self.old.ir, self.new.ir
        old_triggers = {_trigger_words(t) for t in old_ir.triggers}
        for t in new_ir.triggers:
            words = _trigger_words(t)
            if words not in old_triggers:
                out.append(
                    Gain(
                        "",
                        "trigger",
                        f"starts by itself: {words}",
                        f"{self.was}: " + (_and(sorted(old_triggers)) or "only when started"),
                    )
                )
        old_creds = set(self.old.report.marks.credentials) if self.old.report.marks else set()
        new_creds = self.new.report.marks.credentials if self.new.report.marks else ()
        for cred in new_creds:
            if cred not in old_creds:
                out.append(
                    Gain(
                        "",
                        "credential",
                        f"uses the key `{cred}`",
                        f"{self.was}: " + (_and(sorted(old_creds)) or "no key"),
                    )
                )
        return out


def _kind(inst: _Inst) -> tuple[str, str]:
    return inst.capability, inst.operation


def _trigger_words(t: n.Trigger) -> str:
    return f"schedule {t.cron}" if t.type == "schedule" else str(t.type)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _rank(order: tuple[str | None, ...], value: Any) -> int:
    return order.index(value) if value in order else len(order)


def _privacy_words(privacy: str | None) -> str:
    return {
        "local-only": "a local model only",
        "local-preferred": "a local model, or a remote one",
        "remote-allowed": "a remote model",
    }.get(str(privacy), "any model, remote included")


def _times(k: int) -> str:
    return "once" if k == 1 else "never" if k == 0 else f"{k} times"


def _tick(words: str, literal: bool) -> str:
    return f"`{words}`" if literal else words


def _row(cap: str) -> Any:
    from forgec.ir.capabilities import BY_NAME

    return BY_NAME.get(cap)


def _networked(cap: str) -> bool:
    """Whether the capability's row reaches the network (its hosts are the allowlist's)."""
    row = _row(cap)
    return bool(row is not None and row.needs_network)


def _leaves_device(cap: str) -> bool:
    """Whether the capability's row sends data off the device (an egress sink)."""
    row = _row(cap)
    return bool(row is not None and row.sink == "egress")


# --- witness: an input that shows a gain -----------------------------------------------------


Calls = list[tuple[str, tuple[str, str]]]  # (node, (capability, input as JSON text))


def _witnesses(
    old: Any, new: Any, gains: list[Gain], given: list[Any], cases: list[Any]
) -> list[Gain]:
    """Each gain gets the first input (a test case's, then the inputs given, then those built
    from `inputSchema`) with which the new version makes the gained call and the old version,
    given the same input, does not make it."""
    wanted = {g.node for g in gains if g.node}
    if not wanted:
        return gains
    try:
        from forgec.backend import lower_report

        old_program = lower_report(old)
        new_program = lower_report(new)
    except Exception:  # a tool that does not lower has no run to show
        return gains
    probes: list[tuple[Any, str, Callable[[Any, Any], Calls]]] = []
    for case in cases:  # a §22 case: its host, mocks and model answers too
        name = safe_text(getattr(case, "name", "a test case"))
        probes.append((getattr(case, "input", None), f"test case {name}", _case_runner(case)))
    probes += [(x, "a test case", _calls) for x in given if isinstance(x, dict)]
    probes += [(x, "inputSchema", _calls) for x in schema_inputs(new.ir.input_schema)]
    found: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    seen: set[str] = set()
    for value, source, runner in probes:
        if len(seen) >= WITNESS_RUNS or time.monotonic() - started > WITNESS_SECONDS:
            break
        text = source + dumps_text(value) if runner is not _calls else dumps_text(value)
        if text in seen:
            continue
        seen.add(text)
        new_calls = runner(new_program, value)
        if not any(node in wanted and node not in found for node, _ in new_calls):
            continue
        old_calls = {call for _, call in runner(old_program, value)}
        for node, call in new_calls:
            if node in wanted and node not in found and call not in old_calls:
                found[node] = {"input": value, "from": source}
        if wanted <= found.keys():
            break
    return [attrs.evolve(g, witness=found.get(g.node)) if g.node else g for g in gains]


def _case_runner(case: Any) -> Callable[[Any, Any], Calls]:
    def run(program: Any, _value: Any) -> Calls:
        try:
            from forgec.testing import run_case

            result = run_case(program, case, check=False)
        except Exception:  # a case that cannot run shows nothing
            return []
        return [(c.node, (c.capability, dumps_text(c.input))) for c in result.calls]

    return run


def _calls(program: Any, value: Any) -> Calls:
    """(node, (capability, input as JSON text)) of every call a run of PROGRAM on VALUE makes
    on a fresh in-memory host (a capability it does not provide answers an empty result)."""
    from forgec.runtime.vm import run

    host = _witness_host()
    try:
        run(program, value, host=host, consent=lambda _request: True, sleep=lambda _s: None)
    except Exception:  # a witness is an example: a run that breaks shows nothing
        return []
    return [(c.node, (c.name, dumps_text(c.input))) for c in host.calls if c.kind != "compensate"]


def _witness_host_class() -> type:
    from forgec.runtime.memory_host import _HANDLERS, MemoryHost

    class WitnessHost(MemoryHost):
        def __init__(self) -> None:
            super().__init__(clock=lambda: "2026-01-01T00:00:00.000000Z", model=_model_answer)

        def _dispatch(self, capability: str, input: Any) -> Any:
            if capability in _HANDLERS:
                return super()._dispatch(capability, input)
            from forgec.ir.capabilities import BY_NAME

            query = fl.QUERY_FIELDS.get(capability)
            if query is not None and isinstance(input, dict):
                # one row holding every column the query reads: a loop over the rows runs
                from forgec.catalog.sql import query_columns

                columns = query_columns(input.get(query)) or ()
                row = {c: "x" for _, c in sorted(columns) if c != "*"}
                return {"rows": [row] if row else [], "truncated": False}
            spec = BY_NAME.get(capability)
            return _minimal(spec.result if spec is not None else {})

    return WitnessHost


_HOST_CLASS: list[type] = []


def _witness_host() -> Any:
    """A fresh witness host (its class is made on first use: the runtime loads lazily)."""
    if not _HOST_CLASS:
        _HOST_CLASS.append(_witness_host_class())
    return _HOST_CLASS[0]()


def _model_answer(op: str, input: Any, requirements: Any, schema: Any) -> Any:
    return _minimal(schema) if isinstance(schema, Mapping) else "ok"


def _minimal(schema: Any, depth: int = 0) -> Any:
    """The smallest value a JSON Schema accepts, as far as this subset tells."""
    if not isinstance(schema, Mapping) or depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        return {
            k: _minimal(props.get(k), depth + 1)
            for k in schema.get("required") or ()
            if isinstance(k, str)
        }
    if kind == "array":
        return []
    if kind == "string":
        return "x" * int(schema.get("minLength") or 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def schema_inputs(schema: Any, limit: int = WITNESS_RUNS) -> list[dict[str, Any]]:
    """Inputs built from an input schema: one with every property at its first candidate, then
    one per other candidate of each property (enum values, bounds, defaults, both booleans, an
    empty and a one-item list)."""
    if not isinstance(schema, Mapping):
        return [{}]
    props = schema.get("properties") or {}
    if not isinstance(props, Mapping):
        return [{}]
    choices = {k: _candidates(v) for k, v in props.items()}
    base = {k: c[0] for k, c in choices.items() if c}
    out = [base]
    for k, c in choices.items():
        for value in c[1:]:
            if len(out) >= limit:
                return out
            out.append({**base, k: value})
    return out


def _candidates(schema: Any) -> list[Any]:
    if not isinstance(schema, Mapping):
        return ["x", 1, True]
    out: list[Any] = []
    for key in ("const", "default"):
        if key in schema:
            out.append(schema[key])
    out.extend(schema.get("enum") or ())
    out.extend(schema.get("examples") or ())
    kind = schema.get("type")
    if kind in ("integer", "number"):
        out += [schema.get("minimum", 0), schema.get("maximum", 1), 1]
    elif kind == "boolean":
        out += [True, False]
    elif kind == "string":
        out += ["x" * max(1, int(schema.get("minLength") or 1))]
    elif kind == "array":
        item = _candidates(schema.get("items"))
        out += [[item[0]] if item else [], []]
    elif kind == "object":
        out += [_minimal(schema)]
    elif kind is None:
        out += ["x", 1, True, [], {}]
    unique: list[Any] = []
    texts: set[str] = set()
    for value in out:
        text = dumps_text(value)
        if text not in texts:
            texts.add(text)
            unique.append(value)
    return unique
