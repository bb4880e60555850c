"""A tool's flow as a picture: Mermaid (`flowchart`) or Graphviz DOT.

Works on the manifest JSON (either front end), so a flow with errors is still drawn as far as it
goes. Each node gets a name from its position (`n2`, `n2_0` for the first body node of node 2),
never from its id, so odd or repeated ids cannot break the output. Shapes say the kind (a
capability step is a subroutine box, a model step a stadium, a test a diamond, a loop a hexagon
whose body is a subgraph/cluster, `return` a circle, `fail` a octagon); edges are labelled
`next`/`then`/`else`/`body`, and a body node that ends the iteration has a dotted `repeat` edge
back to its loop. Nodes the entry cannot reach are grey. Every capability step shows its power
and risk from the target's catalog (the worst case when the deciding field is computed).

Given the flow facts (SPEC §15), the picture also marks where data goes: a dashed red edge from
the step a private label enters by (e.g. `notes.list`) to each egress sink it reaches, and a
dashed orange edge from an outside source (`net.http`) to each write or egress it steers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forgec.ir.shapes import is_expression
from forgec.render.safe import safe_text


def _literal_fields(inp: Any) -> dict[str, Any]:
    if not isinstance(inp, dict):
        return {}
    return {k: v for k, v in inp.items() if not _has_expr(v)}


def _has_expr(v: Any) -> bool:
    """Whether an expression (`$ref`, `$template`, `$credential`) stands anywhere in `v`."""
    if isinstance(v, dict):
        if is_expression(v):
            return True
        return any(_has_expr(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_expr(x) for x in v)
    return False


def step_risk(node: dict[str, Any], catalog: Any) -> str | None:
    """`Read · R1` for a capability step the catalog knows, `unknown capability` otherwise."""
    if catalog is None:
        return None
    spec = catalog.get(node.get("capability")) if isinstance(node.get("capability"), str) else None
    if spec is None:
        return "unknown capability"
    try:
        marks = spec.step_marks(_literal_fields(node.get("input")))
    except Exception:  # a resolver must never stop the picture
        return None
    return f"{marks.power} · {marks.risk}"


class _Flow:
    """The flow flattened: each node with its drawing name, scope, edges and reachability."""

    def __init__(self, manifest: Any, catalog: Any) -> None:
        flow = manifest.get("flow") if isinstance(manifest, dict) else None
        flow = flow if isinstance(flow, dict) else {}
        raw_nodes = flow.get("nodes")
        nodes: list[Any] = raw_nodes if isinstance(raw_nodes, list) else []
        self.entry = flow.get("entry")
        self.top: list[tuple[str, dict[str, Any]]] = []
        self.bodies: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for i, node in enumerate(nodes):
            if not isinstance(node, dict):
                continue
            key = f"n{i}"
            self.top.append((key, node))
            body = node.get("body")
            if node.get("type") == "foreach" and isinstance(body, list):
                self.bodies[key] = [
                    (f"{key}_{j}", b) for j, b in enumerate(body) if isinstance(b, dict)
                ]
        self.catalog = catalog
        self.reachable: set[str] = set()
        self._reach(self.top, self.entry)
        for key in list(self.bodies):
            if key in self.reachable and self.bodies[key]:
                first = self.bodies[key][0][1].get("id")
                self._reach(self.bodies[key], first)

    @staticmethod
    def _index(scope: list[tuple[str, dict[str, Any]]]) -> dict[Any, str]:
        index: dict[Any, str] = {}
        for key, node in scope:
            nid = node.get("id")
            if isinstance(nid, str):
                index.setdefault(nid, key)
        return index

    def _reach(self, scope: list[tuple[str, dict[str, Any]]], start: Any) -> None:
        index = self._index(scope)
        by_key = dict(scope)
        todo = [index[start]] if isinstance(start, str) and start in index else []
        while todo:
            key = todo.pop()
            if key in self.reachable:
                continue
            self.reachable.add(key)
            for _label, target in self.edges(by_key[key]):
                if isinstance(target, str) and target in index:
                    todo.append(index[target])

    @staticmethod
    def edges(node: dict[str, Any]) -> list[tuple[str, Any]]:
        return [(label, node[label]) for label in ("next", "then", "else") if label in node]

    def label(self, node: dict[str, Any]) -> str:
        # the lines are laid out here; each field of the file stays on its own line, escaped
        return "\n".join(safe_text(line) for line in self._label_lines(node))

    def _label_lines(self, node: dict[str, Any]) -> list[str]:
        nid = node.get("id")
        kind = node.get("type")
        head = str(nid) if isinstance(nid, str) else "(no id)"
        if kind == "capability":
            risk = step_risk(node, self.catalog)
            return [head, f"call {node.get('capability')}", *([risk] if risk else [])]
        if kind == "llm":
            return [head, f"llm {node.get('op')}"]
        if kind == "set":
            return [head, f"set {node.get('target')}"]
        if kind == "if":
            cond = node.get("condition")
            op = cond.get("op") if isinstance(cond, dict) else None
            return [head, f"if {op}"]
        if kind == "foreach":
            return [head, f"for each {node.get('itemVar')}"]
        if kind == "fail":
            return [head, f"fail {node.get('code')}"]
        return [head, str(kind)]


def _walk_edges(
    flow: _Flow, emit: Callable[[str, str, str, bool], None], missing: Callable[[str, str], str]
) -> None:
    """Call `emit(src, dst, label, dotted)` for every edge, in a stable order."""
    scopes = [(flow.top, None)] + [(body, key) for key, body in flow.bodies.items()]
    for scope, loop in scopes:
        index = _Flow._index(scope)
        for key, node in scope:
            for label, target in _Flow.edges(node):
                dst = index.get(target) if isinstance(target, str) else None
                emit(key, dst if dst else missing(key, str(target)), label, False)
            if flow.bodies.get(key):
                emit(key, flow.bodies[key][0][0], "body", False)
            ends = node.get("type") in ("set", "capability", "llm") and "next" not in node
            if loop is not None and ends:
                emit(key, loop, "repeat", True)


# ---- Mermaid --------------------------------------------------------------------------------

_MERMAID_SHAPES = {
    "set": ("[", "]"),
    "capability": ("[[", "]]"),
    "llm": ("([", "])"),
    "if": ("{", "}"),
    "foreach": ("{{", "}}"),
    "return": ("((", "))"),
    "fail": ("[/", "\\]"),
}


_FLOW_COLOURS = {"private": "#d62728", "untrusted": "#ff7f0e"}


def flow_edges(flows: Any) -> list[tuple[str, str, str, str]]:
    """(from node id, to node id, label, kind) for each private → egress and untrusted →
    write/egress flow, once per pair of nodes and kind."""
    from forgec.runtime.sources_and_sinks import is_private, is_untrusted, sink_kind

    out: dict[tuple[str, str, str], str] = {}
    for f in flows or ():
        kind = sink_kind(f.sink)
        if is_private(f.source) and kind == "egress":
            what = "private"
        elif is_untrusted(f.source) and kind in ("egress", "write"):
            what = "untrusted"
        else:
            continue
        if not f.path or f.path[0] == f.node:
            continue
        key = (f.path[0], f.node, what)
        label = f.source.split(":", 1)[1]
        if key in out and label not in out[key].split(", "):
            out[key] += f", {label}"
        else:
            out.setdefault(key, label)
    return [(a, b, label, what) for (a, b, what), label in out.items()]


def _keys(flow: _Flow) -> dict[Any, str]:
    keys = _Flow._index(flow.top)
    for body in flow.bodies.values():
        for key, value in _Flow._index(body).items():
            keys.setdefault(key, value)
    return keys


def _mermaid_text(s: str) -> str:
    s = safe_text(s, keep_newlines=True)  # labels' lines are laid out by `label`
    out = s.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    return out.replace("\n", "<br/>")


def to_mermaid(manifest: Any, *, catalog: Any = None, flows: Any = ()) -> str:
    """The flow as a Mermaid flowchart (renders on GitHub and in most Markdown viewers)."""
    flow = _Flow(manifest, catalog)
    lines = ["flowchart TD"]
    lines.append("  classDef unreachable fill:#eeeeee,stroke:#999999,color:#888888")
    lines.append("  classDef missing stroke-dasharray:4 4,stroke:#cc0000,color:#cc0000")
    lines.append("  start((entry))")
    unreachable: list[str] = []
    missing_nodes: dict[str, str] = {}

    def node_line(key: str, node: dict[str, Any], indent: str) -> str:
        left, right = _MERMAID_SHAPES.get(str(node.get("type")), ("[", "]"))
        if key not in flow.reachable:
            unreachable.append(key)
        return f'{indent}{key}{left}"{_mermaid_text(flow.label(node))}"{right}'

    for key, node in flow.top:
        lines.append(node_line(key, node, "  "))
        if key in flow.bodies:
            title = f"body of {node.get('id')}"
            lines.append(f'  subgraph {key}_body ["{_mermaid_text(title)}"]')
            for bkey, bnode in flow.bodies[key]:
                lines.append(node_line(bkey, bnode, "    "))
            lines.append("  end")
    edges: list[str] = []
    entry_index = _Flow._index(flow.top)
    if isinstance(flow.entry, str) and flow.entry in entry_index:
        edges.append(f"  start --> {entry_index[flow.entry]}")

    def missing(src: str, target: str) -> str:
        name = missing_nodes.setdefault(f"{src}:{target}", f"missing{len(missing_nodes)}")
        return name

    def emit(src: str, dst: str, label: str, dotted: bool) -> None:
        arrow = f"-. {label} .->" if dotted else f"-->|{label}|"
        edges.append(f"  {src} {arrow} {dst}")

    _walk_edges(flow, emit, missing)
    for where, name in missing_nodes.items():
        lines.append(f'  {name}["{_mermaid_text("missing: " + where.split(":", 1)[1])}"]')
    keys = _keys(flow)
    styles: list[str] = []
    for a, b, label, what in flow_edges(flows):
        if a in keys and b in keys:
            styles.append(
                f"  linkStyle {len(edges)} stroke:{_FLOW_COLOURS[what]},stroke-dasharray:5 5,"
                f"color:{_FLOW_COLOURS[what]}"
            )
            edges.append(f'  {keys[a]} -. "{_mermaid_text(what + ": " + label)}" .-> {keys[b]}')
    lines.extend(edges)
    lines.extend(styles)
    if unreachable:
        lines.append(f"  class {','.join(unreachable)} unreachable")
    if missing_nodes:
        lines.append(f"  class {','.join(missing_nodes.values())} missing")
    return "\n".join(lines) + "\n"


# ---- Graphviz DOT ---------------------------------------------------------------------------

_DOT_SHAPES = {
    "set": "shape=box",
    "capability": "shape=box, peripheries=2",
    "llm": 'shape=box, style="rounded"',
    "if": "shape=diamond",
    "foreach": "shape=hexagon",
    "return": "shape=doublecircle",
    "fail": 'shape=octagon, color="#cc0000"',
}


def _dot_text(s: str) -> str:
    s = safe_text(s, keep_newlines=True)  # labels' lines are laid out by `label`
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(manifest: Any, *, catalog: Any = None, flows: Any = ()) -> str:
    """The flow as a Graphviz digraph (`dot -Tsvg`); loop bodies are clusters."""
    flow = _Flow(manifest, catalog)
    title = manifest.get("id") if isinstance(manifest, dict) else None
    lines = [f"digraph {_dot_text(str(title) if isinstance(title, str) else 'flow')} {{"]
    lines.append('  node [fontname="Helvetica", fontsize=11];')
    lines.append('  edge [fontname="Helvetica", fontsize=10];')
    lines.append('  start [shape=circle, label="entry", style=filled, fillcolor="#dddddd"];')

    def node_line(key: str, node: dict[str, Any], indent: str) -> str:
        attrs = _DOT_SHAPES.get(str(node.get("type")), "shape=box")
        if key not in flow.reachable:
            attrs += (
                ', style="filled,dashed", fillcolor="#eeeeee", fontcolor="#888888", color="#999999"'
            )
        return f"{indent}{key} [label={_dot_text(flow.label(node))}, {attrs}];"

    for key, node in flow.top:
        lines.append(node_line(key, node, "  "))
        if key in flow.bodies:
            lines.append(f"  subgraph cluster_{key} {{")
            lines.append(f"    label={_dot_text('body of ' + str(node.get('id')))};")
            lines.append('    style="rounded,dashed";')
            for bkey, bnode in flow.bodies[key]:
                lines.append(node_line(bkey, bnode, "    "))
            lines.append("  }")
    missing_nodes: dict[str, str] = {}
    edges: list[str] = []
    entry_index = _Flow._index(flow.top)
    if isinstance(flow.entry, str) and flow.entry in entry_index:
        edges.append(f"  start -> {entry_index[flow.entry]};")

    def missing(src: str, target: str) -> str:
        return missing_nodes.setdefault(f"{src}:{target}", f"missing{len(missing_nodes)}")

    def emit(src: str, dst: str, label: str, dotted: bool) -> None:
        style = ", style=dotted" if dotted else ""
        edges.append(f"  {src} -> {dst} [label={_dot_text(label)}{style}];")

    _walk_edges(flow, emit, missing)
    for where, name in missing_nodes.items():
        text = "missing: " + where.split(":", 1)[1]
        lines.append(
            f'  {name} [label={_dot_text(text)}, shape=box, style=dashed, color="#cc0000"];'
        )
    keys = _keys(flow)
    for a, b, label, what in flow_edges(flows):
        if a in keys and b in keys:
            colour = _FLOW_COLOURS[what]
            edges.append(
                f"  {keys[a]} -> {keys[b]} [label={_dot_text(what + ': ' + label)}, "
                f'style=dashed, color="{colour}", fontcolor="{colour}", constraint=false];'
            )
    lines.extend(edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- the facts as data (the screen draws its SVG from them) -----------------------------------


def graph_parts(manifest: Any, *, catalog: Any = None, flows: Any = ()) -> dict[str, Any]:
    """What `to_mermaid` and `to_dot` draw, as data: `nodes` ({"key", "id", "type", "lines",
    "reachable", "loop"}: lines already safe text; `id` the node's own id, raw, or None), `edges` ({"src", "dst", "label", "dotted"};
    a missing target is a node of type "missing"), `flows` ({"src", "dst", "label", "kind"}:
    "private" or "untrusted", drawn dashed) and `entry` (the key the entry names, or None)."""
    flow = _Flow(manifest, catalog)
    nodes: list[dict[str, Any]] = []
    for key, node in flow.top:
        nodes.append(_part(flow, key, node, None))
        nodes.extend(_part(flow, bkey, bnode, key) for bkey, bnode in flow.bodies.get(key, []))
    missing_nodes: dict[str, str] = {}
    edges: list[dict[str, Any]] = []

    def missing(src: str, target: str) -> str:
        return missing_nodes.setdefault(f"{src}:{target}", f"missing{len(missing_nodes)}")

    def emit(src: str, dst: str, label: str, dotted: bool) -> None:
        edges.append({"src": src, "dst": dst, "label": label, "dotted": dotted})

    _walk_edges(flow, emit, missing)
    for where, name in missing_nodes.items():
        text = safe_text("missing: " + where.split(":", 1)[1])
        nodes.append(
            {
                "key": name,
                "id": None,
                "type": "missing",
                "lines": [text],
                "reachable": False,
                "loop": None,
            }
        )
    keys = _keys(flow)
    entry_index = _Flow._index(flow.top)
    return {
        "entry": entry_index.get(flow.entry) if isinstance(flow.entry, str) else None,
        "nodes": nodes,
        "edges": edges,
        "flows": [
            {"src": keys[a], "dst": keys[b], "label": safe_text(label), "kind": what}
            for a, b, label, what in flow_edges(flows)
            if a in keys and b in keys
        ],
    }


def _part(flow: _Flow, key: str, node: dict[str, Any], loop: str | None) -> dict[str, Any]:
    nid = node.get("id")
    return {
        "key": key,
        "id": nid if isinstance(nid, str) else None,  # raw: to match, never to print
        "type": str(node.get("type")),
        "lines": flow.label(node).split("\n"),
        "reachable": key in flow.reachable,
        "loop": loop,
    }
