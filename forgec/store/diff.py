"""What changed between two stored versions, in the three parts of SPEC §14.

A consent is bound to one content hash; what a person is shown before giving it is the change
from the version they last agreed to (or everything, for a first consent):

1. **effects** gained and lost — the version's stored effects (`forgec.store.effects`), compared
   exactly, item by item: (capability, operation) pairs of the reachable steps, hosts, labels,
   credentials, flows (§15), triggers, and the model's privacy and effort;
2. **behaviour**, step by step — computed from the two *checked* IRs (each stored manifest is
   checked again, so what is compared is what the checker and the lowering saw, never text).
   Nodes are matched by id; a node whose id changed but that keeps its type, its loop and its
   place in the flow is matched by position. For each matched pair, every field of the node
   type's row in `forgec.ir.rules.NODE_FIELDS` is compared (a capability's `input` field by
   field: `input.status`), so no field of a step is left out by a list kept here. Steps added
   and removed, a step moved into or out of a loop, and the tool-level fields that decide what
   runs (entry, bounds, schemas, state, model defaults, network, credentials) are listed too;
3. **text** — title, description, `createdAt`, the `ui` card and credential purposes.

`diff_versions(store, tool_id, a, b)` answers in the shape the CLI's `tools diff --format json`
prints and the Tool Forge screen reads:

    {"id", "from": {"version", "hash", "author"} | null, "to": {...},
     "effects": {"gained": [{"kind", "text"}], "lost": [...]},
     "behaviour": [{"change": "added"|"removed"|"changed", "node", "what", "old", "new", "text"}],
     "text": [{"field", "old", "new"}],
     "summary": "No change." | "Only text changed." | ...,
     "verdict": {"newPower", "headline", "gains": [...]} | null}

`verdict` (SPEC §23, `forgec.store.verdict`) answers "what can B do that A could not?" from
the two check reports; null for a first consent.

`node` is null for a tool-level change; `old` and `new` are display strings (null for the side
that has nothing), values in `.forge` notation (`forgec.frontend.dsl_format.one_line`), and
every string passes through the one `safe_text`, so no control or bidi character reaches a
person raw. The diff of a version with itself is empty ("No change."), and it is empty only
when the two canonical manifests are equal apart from `version` and `parentVersion` (which the
`from`/`to` header shows): a difference no row above explains is still listed (`what`:
"manifest"), so nothing changes silently.

Cost: two checks of stored manifests, then linear in the size of the two manifests (every
node and value is rendered at most twice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forgec.frontend.dsl_format import condition_line, name, one_line
from forgec.ir import nodes as n
from forgec.ir.rules import NODE_FIELDS
from forgec.render.safe import safe_text
from forgec.runtime.jsontext import dumps_text
from forgec.store import effects as fx

# the kind of each effect set, as the diff names it (`effects.SET_KEYS` + model)
EFFECT_KINDS = {
    "operations": "operation",
    "hosts": "host",
    "labels": "label",
    "credentials": "credential",
    "flows": "flow",
    "triggers": "trigger",
}
TEXT_FIELDS = ("title", "description", "createdAt", "ui.title", "ui.values")
NO_CHANGE = "No change."
ONLY_TEXT = "Only text changed."
FIRST = "First consent: nothing was agreed to before, so everything this version does is new."


Which = int | str | None  # a version N, "pN" (proposal N), or None


def diff_versions(store: Any, tool_id: str, a: Which, b: Which) -> dict[str, Any]:
    """The change from A (None: nothing consented yet) to B (None: the current version) of
    TOOL_ID in STORE, both read with their hashes verified. Each is a version number or
    "pN" for proposal N."""
    new = _read(store, tool_id, b)
    old = _read(store, tool_id, a) if a is not None else None
    new_report = store.checked_report(new)
    old_report = store.checked_report(old) if old is not None else None
    return diff_stored(
        old,
        new,
        old_ir=old_report.ir if old_report is not None else None,
        new_ir=new_report.ir,
        old_report=old_report,
        new_report=new_report,
    )


def _read(store: Any, tool_id: str, which: Which) -> Any:
    if isinstance(which, str):
        return store.get_proposal(tool_id, int(which.removeprefix("p")))
    return store.get(tool_id, which)


def diff_stored(
    old: Any,
    new: Any,
    *,
    old_ir: Any,
    new_ir: Any,
    old_report: Any = None,
    new_report: Any = None,
) -> dict[str, Any]:
    """The diff of two `StoredVersion`s (OLD may be None) given their checked IRs; with both
    check reports, `verdict` says whether the new one can do anything the old could not
    (`forgec.store.verdict`, SPEC §23), else it is null."""
    gained, lost = effect_changes(old.effects if old is not None else {}, new.effects)
    text = text_changes(old_ir, new_ir)
    moved = {e["kind"] for e in (*gained, *lost)}
    behaviour = behaviour_changes(old_ir, new_ir, effects_moved=moved)
    if old is not None and not (gained or lost or text or behaviour):
        behaviour = _unexplained(old.manifest, new.manifest)
    out = {
        "id": new.tool_id,
        "from": _header(old) if old is not None else None,
        "to": _header(new),
        "effects": {"gained": gained, "lost": lost},
        "behaviour": behaviour,
        "text": text,
        "summary": "",
        "verdict": None,
    }
    out["summary"] = summary(out)
    if old is not None and old_report is not None and new_report is not None:
        from forgec.store.verdict import verdict

        found = verdict(old_report, new_report, was=old.label, inputs=_inputs(old, new))
        out["verdict"] = found.to_json() if found is not None else None
    return out


def _inputs(*versions: Any) -> list[Any]:
    """The test cases' inputs kept with the versions (SPEC §22), as witness candidates."""
    out: list[Any] = []
    for stored in versions:
        for case in getattr(stored, "tests", None) or ():
            if isinstance(case, dict) and isinstance(case.get("input"), dict):
                out.append(case["input"])
    return out


def is_empty(diff: dict[str, Any]) -> bool:
    e = diff["effects"]
    return not (e["gained"] or e["lost"] or diff["behaviour"] or diff["text"])


def summary(diff: dict[str, Any]) -> str:
    if diff["from"] is None:
        return FIRST
    if is_empty(diff):
        return NO_CHANGE
    e = diff["effects"]
    if not (e["gained"] or e["lost"] or diff["behaviour"]):
        return ONLY_TEXT
    if not (e["gained"] or e["lost"]):
        # said first: the same effects are exactly what hid such a change before (SPEC §14)
        parts = [
            _count(len(diff["behaviour"]), "change in behaviour", "changes in behaviour"),
            _count(len(diff["text"]), "text change", "text changes"),
        ]
        return "Same effects, but it behaves differently: " + ", ".join(p for p in parts if p) + "."
    parts = [
        _count(len(e["gained"]), "effect gained", "effects gained"),
        _count(len(e["lost"]), "effect lost", "effects lost"),
        _count(len(diff["behaviour"]), "change in behaviour", "changes in behaviour"),
        _count(len(diff["text"]), "text change", "text changes"),
    ]
    return "Changed: " + ", ".join(p for p in parts if p) + "."


def _count(k: int, one: str, many: str) -> str:
    return "" if k == 0 else f"{k} {one if k == 1 else many}"


def _header(stored: Any) -> dict[str, Any]:
    # a proposal holds no version number: its `version` is null (it was asked for as "pN")
    version = None if getattr(stored, "proposal", None) is not None else stored.version
    return {"version": version, "hash": stored.hash, "author": stored.author}


# -- 1. effects -----------------------------------------------------------------------------------


def effect_changes(
    old: dict[str, Any], new: dict[str, Any]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Exact set differences, in `effects.SET_KEYS` order, then the model."""
    gained: list[dict[str, str]] = []
    lost: list[dict[str, str]] = []
    for key, kind in EFFECT_KINDS.items():
        before = [_item(x) for x in old.get(key) or []]
        after = [_item(x) for x in new.get(key) or []]
        gained += [_effect(kind, key, x) for x in after if x not in before]
        lost += [_effect(kind, key, x) for x in before if x not in after]
    m_old, m_new = old.get("model"), new.get("model")
    if m_old != m_new:
        if m_new:
            gained.append({"kind": "model", "text": safe_text(_model_words(m_new))})
        if m_old:
            lost.append({"kind": "model", "text": safe_text(_model_words(m_old))})
    return gained, lost


def _item(x: Any) -> Any:
    return list(x) if isinstance(x, list | tuple) else x


def _effect(kind: str, key: str, item: Any) -> dict[str, str]:
    words = fx.words(key, item) if isinstance(item, list) else str(item)
    return {"kind": kind, "text": safe_text(words)}


def _model_words(model: dict[str, Any]) -> str:
    privacy = model.get("privacy") or "any model"
    effort = model.get("effort") or "default effort"
    return f"a model step ({privacy}, {effort})"


# -- 2. behaviour ---------------------------------------------------------------------------------

Entry = dict[str, Any]


def _json(v: Any) -> Any:
    """An IR value (or a field of a node) as the manifest JSON that spells it."""
    if isinstance(v, n.Literal):
        return v.value
    if isinstance(v, n.Ref):
        return {"$ref": v.text}
    if isinstance(v, n.Template):
        return {"$template": v.text}
    if isinstance(v, n.CredentialRef):
        return {"$credential": v.id}
    if isinstance(v, n.ObjectExpr):
        return {k: _json(x) for k, x in v.fields}
    if isinstance(v, n.ListExpr):
        return [_json(x) for x in v.items]
    if isinstance(v, n.Condition):
        return _fields({"op": v.op, "left": _json(v.left), "right": _json(v.right)}, v.right)
    if isinstance(v, n.Retry):
        return _fields({"attempts": v.attempts, "backoffMs": v.backoff_ms})
    if isinstance(v, n.ModelRequirements):
        return _fields(
            {
                "structuredOutput": v.structured_output,
                "context": v.context,
                "privacy": v.privacy,
                "reasoningEffort": v.reasoning_effort,
            }
        )
    return v


def _fields(d: dict[str, Any], right: Any = ...) -> dict[str, Any]:
    # a condition's `right` may be the literal null: keep it when the IR has it
    return {k: x for k, x in d.items() if x is not None or (k == "right" and right is not None)}


def _same(a: Any, b: Any) -> bool:
    # forgec's JSON text tells 1 from 1.0 from true, and keeps key order (it is meaningful)
    return dumps_text(a) == dumps_text(b)


def _show(kind: str, v: Any) -> str | None:
    if v is None:
        return None
    if kind == "condition":
        return safe_text(condition_line(v))
    if kind in ("name", "op", "fail_code") and isinstance(v, str):
        return safe_text(name(v))
    return safe_text(one_line(v))


def _field_rows(node: n.Node) -> list[tuple[str, str, Any]]:
    """(what, kind, JSON) for every field of the node's row in NODE_FIELDS but its body; a
    capability's or model step's object input is one row per input field."""
    rows: list[tuple[str, str, Any]] = []
    for field in NODE_FIELDS[n.node_type(node)]:
        if field.kind == "body":
            continue
        rows.append((field.name, field.kind, _json(getattr(node, field.attr))))
    return rows


def _compare_fields(old: n.Node, new: n.Node) -> list[tuple[str, str, Any, Any]]:
    out: list[tuple[str, str, Any, Any]] = []
    for (what, kind, a), (_, _, b) in zip(_field_rows(old), _field_rows(new), strict=True):
        if _same(a, b):
            continue
        if what == "input" and isinstance(a, dict) and isinstance(b, dict) and _plain(a, b):
            for key in [*b, *(k for k in a if k not in b)]:
                if key not in a or key not in b or not _same(a[key], b[key]):
                    out.append((f"input.{key}", "value", a.get(key), b.get(key)))
            continue
        out.append((what, kind, a, b))
    return out


def _plain(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Both inputs are objects of fields (not one `$ref`/`$template`/`$credential`)."""
    return not any(len(d) == 1 and next(iter(d)).startswith("$") for d in (a, b))


class _Flow:
    """One checked flow, flattened: each node with its loop, its place, and how to name it."""

    def __init__(self, ir: Any) -> None:
        flow = getattr(ir, "flow", None)
        self.flow = flow
        self.order: list[n.Node] = []
        self.loop: dict[str, n.ForeachNode | None] = {}
        self.place: dict[str, tuple[str | None, int]] = {}
        self.producer: dict[str, str] = {}  # target name -> the capability that set it
        for scope, nodes in self._scopes(flow.nodes if flow is not None else ()):
            for i, node in enumerate(nodes):
                self.order.append(node)
                self.loop[node.id] = scope
                self.place[node.id] = (scope.id if scope is not None else None, i)
                if isinstance(node, n.CapabilityNode) and node.target and node.capability:
                    self.producer[node.target] = node.capability
        self.by_id = {node.id: node for node in self.order}

    @staticmethod
    def _scopes(top: tuple[n.Node, ...]) -> list[tuple[n.ForeachNode | None, tuple[n.Node, ...]]]:
        out: list[tuple[n.ForeachNode | None, tuple[n.Node, ...]]] = [(None, top)]
        for node in top:
            if isinstance(node, n.ForeachNode):
                out.append((node, node.body))
        return out

    def what_it_is(self, node: n.Node) -> str:
        if isinstance(node, n.CapabilityNode):
            return node.capability or "capability"
        if isinstance(node, n.LlmNode):
            return f"model {node.op}" if node.op else "model"
        return n.node_type(node)

    def context(self, node: n.Node) -> str:
        """ ", for every item of $open.items (tasks.list)" for a step inside a loop."""
        loop = self.loop.get(node.id)
        if loop is None:
            return ""
        source = _json(loop.source)
        words = f", for every item of {one_line(source)}"
        if isinstance(loop.source, n.Ref) and (cap := self.producer.get(loop.source.root)):
            words += f" (from {cap})"
        return words

    def describe(self, node: n.Node) -> str:
        """A step in one line, as a person reads it."""
        return NODE_TABLE[n.node_type(node)](node)


def _v(value: Any) -> str:
    return one_line(_json(value))


# how a person reads a step of each node type, in one line: keyed by every node type name
# (forgec.ir.rules.NODE_TYPE_NAMES), no default; tests/test_store_diff.py holds it complete
NODE_TABLE: dict[str, Callable[[Any], str]] = {
    "set": lambda node: f"set {node.target} = {_v(node.value)}",
    "capability": lambda node: (
        f"call {node.capability} {_v(node.input)}" + (f" -> {node.target}" if node.target else "")
    ),
    "llm": lambda node: f"model {node.op} {_v(node.input)} -> {node.target}",
    "if": lambda node: (
        f"if {condition_line(_json(node.condition))} then {node.then} else {node.else_}"
    ),
    "foreach": lambda node: (
        f"for each {node.item_var} in {_v(node.source)} (at most {node.max_items})"
    ),
    "return": lambda node: f"return {_v(node.value)}",
    "fail": lambda node: f"fail {node.code}: {one_line(node.message)}",
}


def _match(old: _Flow, new: _Flow) -> tuple[dict[str, str], list[str], list[str]]:
    """(new id -> old id, added new ids, removed old ids): by id, then by place and type."""
    pairs = {i: i for i in new.by_id if i in old.by_id and _kind(old, i) == _kind(new, i)}
    left_new = [i for i in new.by_id if i not in pairs]
    taken = set(pairs.values())
    free_old = {
        (old.place[i], _kind(old, i)): i for i in old.by_id if i not in taken and i not in new.by_id
    }
    added = []
    for i in left_new:
        twin = free_old.pop((_place_in_old(new, old, i, pairs), _kind(new, i)), None)
        if twin is not None:
            pairs[i] = twin
        else:
            added.append(i)
    matched_old = set(pairs.values())
    removed = [i for i in old.by_id if i not in matched_old]
    return pairs, added, removed


def _kind(flow: _Flow, node_id: str) -> str:
    return n.node_type(flow.by_id[node_id])


def _place_in_old(new: _Flow, old: _Flow, node_id: str, pairs: dict[str, str]) -> Any:
    """The node's place in NEW, its loop named as the old flow named it."""
    scope, index = new.place[node_id]
    return (pairs.get(scope, scope) if scope is not None else None, index)


def behaviour_changes(
    old_ir: Any, new_ir: Any, *, effects_moved: set[str] | frozenset[str] = frozenset()
) -> list[Entry]:
    old, new = _Flow(old_ir), _Flow(new_ir)
    out = _tool_level(old_ir, new_ir, effects_moved=effects_moved)
    pairs, added, removed = _match(old, new)
    added_set = set(added)
    for node in new.order:
        if node.id in added_set:
            out.append(
                _entry(
                    "added",
                    node.id,
                    "step",
                    None,
                    safe_text(new.describe(node)),
                    f"new step `{node.id}`: {new.describe(node)}{new.context(node)}",
                )
            )
            continue
        before = old.by_id[pairs[node.id]]
        label = f"step `{node.id}` ({new.what_it_is(node)})"
        if before.id != node.id:
            out.append(
                _entry(
                    "changed",
                    node.id,
                    "id",
                    _q(before.id),
                    _q(node.id),
                    f"{label}: renamed from `{before.id}`",
                )
            )
        was_loop, now_loop = old.loop.get(before.id), new.loop.get(node.id)
        moved = (was_loop is None) != (now_loop is None) or (
            was_loop is not None and now_loop is not None and pairs.get(now_loop.id) != was_loop.id
        )
        if moved:
            out.append(
                _entry(
                    "changed",
                    node.id,
                    "loop",
                    _loop_words(old, before),
                    _loop_words(new, node),
                    f"{label}: now runs {_loop_words(new, node) or 'once, outside any loop'}",
                )
            )
        for what, kind, a, b in _compare_fields(before, node):
            shown_a, shown_b = _show(kind, a), _show(kind, b)
            out.append(
                _entry(
                    "changed",
                    node.id,
                    what,
                    shown_a,
                    shown_b,
                    f"{label}: {what} {shown_a or '(none)'} → {shown_b or '(none)'}"
                    f"{new.context(node)}",
                )
            )
        if old.place[before.id][1] != new.place[node.id][1] and not moved and before.id == node.id:
            out.append(
                _entry(
                    "changed",
                    node.id,
                    "position",
                    str(old.place[before.id][1] + 1),
                    str(new.place[node.id][1] + 1),
                    f"{label}: listed at place {new.place[node.id][1] + 1}, was "
                    f"{old.place[before.id][1] + 1} (the order of steps is their `next`)",
                )
            )
    for old_id in removed:
        node = old.by_id[old_id]
        out.append(
            _entry(
                "removed",
                old_id,
                "step",
                safe_text(old.describe(node)),
                None,
                f"step `{old_id}` removed: {old.describe(node)}{old.context(node)}",
            )
        )
    return out


def _loop_words(flow: _Flow, node: n.Node) -> str | None:
    loop = flow.loop.get(node.id)
    if loop is None:
        return None
    return safe_text(f"in loop `{loop.id}`" + flow.context(node))


def _q(node_id: str | None) -> str | None:
    return None if node_id is None else safe_text(name(node_id))


def _entry(change: str, node: str | None, what: str, old: Any, new: Any, text: str) -> Entry:
    return {
        "change": change,
        "node": safe_text(node) if node is not None else None,
        "what": what,
        "old": old,
        "new": new,
        "text": safe_text(text),
    }


# tool-level fields that decide what runs: (what, IR → JSON, the effect kind that shows it
# first); network, credentials and triggers are listed here only when the effects part shows
# no change of their kind (a mode changed, the same hosts in another order)
ToolField = tuple[str, Callable[[Any], Any], str | None]


def _network(ir: Any) -> Any:
    net = ir.network
    return None if net is None else {"mode": net.mode, "hosts": list(net.hosts)}


def _credentials(ir: Any) -> Any:
    return [{"id": c.id, "hosts": list(c.hosts)} for c in ir.credential_requirements] or None


def _triggers(ir: Any) -> Any:
    return [{"type": t.type, "cron": t.cron} for t in ir.triggers] or None


def _state(ir: Any) -> Any:
    st = ir.state
    return None if st is None else {"fields": st.fields, "maxBytes": st.max_bytes}


TOOL_FIELDS: tuple[ToolField, ...] = (
    ("entry", lambda ir: ir.flow.entry if ir.flow is not None else None, None),
    ("maxTransitions", lambda ir: ir.flow.max_transitions if ir.flow is not None else None, None),
    ("inputSchema", lambda ir: ir.input_schema, None),
    ("outputSchema", lambda ir: ir.output_schema, None),
    ("state", _state, None),
    ("modelDefaults", lambda ir: _json(ir.model_defaults), None),
    ("execution", lambda ir: ir.execution, None),
    ("installScope", lambda ir: ir.install_scope, None),
    ("network", _network, "host"),
    ("credentialRequirements", _credentials, "credential"),
    ("triggers", _triggers, "trigger"),
)


def _tool_level(
    old_ir: Any, new_ir: Any, *, effects_moved: set[str] | frozenset[str]
) -> list[Entry]:
    out = []
    for what, get, kind in TOOL_FIELDS:
        if kind is not None and kind in effects_moved:
            continue
        a = get(old_ir) if old_ir is not None else None
        b = get(new_ir) if new_ir is not None else None
        if _same(a, b):
            continue
        shown_a, shown_b = _show("value", a), _show("value", b)
        out.append(
            _entry(
                "changed",
                None,
                what,
                shown_a,
                shown_b,
                f"{what}: {shown_a or '(none)'} → {shown_b or '(none)'}",
            )
        )
    return out


def _unexplained(old: dict[str, Any], new: dict[str, Any]) -> list[Entry]:
    """The last guard of "empty only when equal": a difference no row explains is still said."""
    strip = ("version", "parentVersion")
    a = {k: v for k, v in old.items() if k not in strip}
    b = {k: v for k, v in new.items() if k not in strip}
    if _same(a, b):
        return []
    keys = [k for k in [*b, *(k for k in a if k not in b)] if not _same(a.get(k), b.get(k))]
    return [
        _entry(
            "changed",
            None,
            "manifest",
            _show("value", a.get(k)),
            _show("value", b.get(k)),
            f"{k} changed",
        )
        for k in keys
    ]


# -- 3. text --------------------------------------------------------------------------------------


def _ui_values(ir: Any) -> Any:
    ui = ir.ui
    if ui is None or not ui.values:
        return None
    return [{"label": v.label, "path": v.path} for v in ui.values]


TEXT_GETTERS: dict[str, Callable[[Any], Any]] = {
    "title": lambda ir: ir.title,
    "description": lambda ir: ir.description,
    "createdAt": lambda ir: ir.created_at,
    "ui.title": lambda ir: ir.ui.title if ir.ui is not None else None,
    "ui.values": _ui_values,
}


def text_changes(old_ir: Any, new_ir: Any) -> list[dict[str, Any]]:
    out = []
    for field in TEXT_FIELDS:
        get = TEXT_GETTERS[field]
        a = get(old_ir) if old_ir is not None else None
        b = get(new_ir) if new_ir is not None else None
        if not _same(a, b):
            out.append({"field": field, "old": _show("value", a), "new": _show("value", b)})
    purposes_old = _purposes(old_ir)
    purposes_new = _purposes(new_ir)
    for cid in [*purposes_new, *(c for c in purposes_old if c not in purposes_new)]:
        a, b = purposes_old.get(cid), purposes_new.get(cid)
        if not _same(a, b):
            out.append(
                {
                    "field": safe_text(f"credential {cid} purpose"),
                    "old": _show("value", a),
                    "new": _show("value", b),
                }
            )
    return out


def _purposes(ir: Any) -> dict[str, Any]:
    if ir is None:
        return {}
    return {str(c.id): c.purpose for c in ir.credential_requirements}
