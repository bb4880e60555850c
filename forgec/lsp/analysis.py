"""One checked document and the index of what is written where in it.

The index is read off the IR that `forgec.check` built (node ids, edges, variable writes and
reads, each with its JSON Pointer) and placed in the text through the report's source map, so
it serves both forms alike. A document whose text cannot be read as a manifest at all (a
`.forge` syntax error) has diagnostics and an empty index.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import attrs

from forgec.ir import nodes as ir
from forgec.ir.rules import SCHEMA_ID
from forgec.ir.span import Span
from forgec.lsp.positions import Point, contains, span_size

_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


def language_of(uri: str, text: str) -> str | None:
    """`forge`, `talostool`, or None for a file the server should leave alone.

    A `.json` file is a manifest only when it says so (`"schema": "talos.local-tool.v1"`).
    """
    suffix = PurePosixPath(uri.split("?", 1)[0]).suffix
    if suffix == ".forge":
        return "forge"
    if suffix == ".talostool":
        return "talostool"
    if suffix == ".json" and SCHEMA_ID in text[:4096]:
        return "talostool"
    return None


@attrs.frozen
class NodeDef:
    id: str
    kind: str
    node: Any  # the IR node
    id_span: Span | None
    span: Span | None
    loop: str | None  # the id of the foreach whose body holds it


@attrs.frozen
class Use:
    """A name written somewhere: a node id in an edge, or a variable read or write."""

    name: str
    span: Span
    node: str | None  # the node it is written in
    role: str  # edge: next|then|else|entry; variable: write|read


@attrs.define
class Analysis:
    uri: str
    text: str
    form: str
    target: str
    report: Any
    nodes: dict[str, list[NodeDef]] = attrs.field(factory=dict)
    edges: list[Use] = attrs.field(factory=list)
    writes: list[Use] = attrs.field(factory=list)
    reads: list[Use] = attrs.field(factory=list)
    loop_vars: dict[str, list[str]] = attrs.field(factory=dict)  # loop id → its variables
    _trivia: Any = attrs.field(default=None, init=False)

    def trivia(self) -> Any:
        """The comments of a `.forge` document (`dsl_trivia.Trivia`), read once; else None."""
        if self.form != "forge":
            return None
        if self._trivia is None:
            from forgec.frontend.dsl_trivia import of_text

            self._trivia = of_text(self.text) or False
        return self._trivia or None

    # -- lookups ---------------------------------------------------------------------------

    def node_defs(self) -> list[NodeDef]:
        return [d for group in self.nodes.values() for d in group]

    def node_at(self, point: Point) -> NodeDef | None:
        """The innermost node whose text holds the point."""
        found = [d for d in self.node_defs() if d.span is not None and contains(d.span, point)]
        return min(found, key=lambda d: span_size(d.span)) if found else None  # type: ignore[arg-type]

    def symbol_at(self, point: Point) -> tuple[str, str, Use | NodeDef] | None:
        """("node", id, where) or ("variable", name, where) for the name under the point."""
        for d in self.node_defs():
            if d.id_span is not None and contains(d.id_span, point):
                return "node", d.id, d
        for use in self.edges:
            if contains(use.span, point):
                return "node", use.name, use
        for use in self.writes + self.reads:
            if contains(use.span, point):
                return "variable", use.name, use
        return None

    def variables(self) -> list[str]:
        names = {u.name for u in self.writes}
        return sorted(names)

    def state_fields(self) -> list[str]:
        raw = self.report.raw if isinstance(self.report.raw, dict) else {}
        state = raw.get("state")
        fields = state.get("fields") if isinstance(state, dict) else None
        return sorted(fields) if isinstance(fields, dict) else []

    def input_fields(self) -> list[str]:
        raw = self.report.raw if isinstance(self.report.raw, dict) else {}
        schema = raw.get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) else None
        return sorted(props) if isinstance(props, dict) else []


def analyse(
    uri: str, text: str, *, target: str = "talos", budget_s: float | None = None
) -> Analysis:
    """Check TEXT (named by URI) and index it; with BUDGET_S, in a worker process within that
    many seconds (`forgec.budget`: over it, the analysis holds `FORGEC_CHECK_BUDGET`)."""
    from forgec.budget import check_with_budget

    form = language_of(uri, text) or "talostool"
    path = _display_path(uri, form)
    # diagnostics and the index only: the deferred flow facts are not worth a keystroke
    report = check_with_budget(text, path=path, target=target, budget_s=budget_s, facts=False)
    analysis = Analysis(uri=uri, text=text, form=form, target=target, report=report)
    manifest = report.ir
    if manifest is None or report.source_map is None:
        return analysis
    _Indexer(analysis, report.source_map).flow(manifest)
    return analysis


def _display_path(uri: str, form: str) -> str:
    """A path whose extension picks the form (what `forgec check` would be given)."""
    name = PurePosixPath(uri.split("?", 1)[0]).name or "document"
    if form == "forge" and not name.endswith(".forge"):
        name += ".forge"
    if form == "talostool" and name.endswith(".forge"):
        name += ".talostool"
    return name


class _Indexer:
    def __init__(self, analysis: Analysis, source_map: Any) -> None:
        self.a = analysis
        self.map = source_map

    def span(self, pointer: str, *, key: bool = False, exact: bool = True) -> Span | None:
        span = self.map.span(pointer, key=key)
        return span

    def flow(self, manifest: Any) -> None:
        flow = getattr(manifest, "flow", None)
        if flow is None:
            return
        if flow.entry:
            span = self.span(f"{flow.pointer}/entry")
            if span is not None:
                self.a.edges.append(Use(flow.entry, span, None, "entry"))
        for node in flow.nodes:
            self.node(node, None)

    def node(self, node: Any, loop: str | None) -> None:
        kind = ir.node_type(node)
        d = NodeDef(
            id=node.id,
            kind=kind,
            node=node,
            id_span=self.span(f"{node.pointer}/id"),
            span=self.span(node.pointer),
            loop=loop,
        )
        self.a.nodes.setdefault(node.id, []).append(d)
        for field, goes_to in ir.edges(node):  # the node table's edge fields
            span = self.span(f"{node.pointer}/{field}")
            if span is not None:
                self.a.edges.append(Use(goes_to, span, node.id, field))
        target = getattr(node, "target", None)
        if isinstance(target, str):
            span = self.span(f"{node.pointer}/target")
            root = target.split(".", 1)[1] if target.startswith("state.") else target
            name = f"state.{root}" if target.startswith("state.") else target
            if span is not None:
                self.a.writes.append(Use(name, span, node.id, "write"))
        for value in _values(node):
            self.value(value, node.id)
        if isinstance(node, ir.ForeachNode):
            names = []
            for field, var in (("itemVar", node.item_var), ("indexVar", node.index_var)):
                if isinstance(var, str):
                    names.append(var)
                    span = self.span(f"{node.pointer}/{field}")
                    if span is not None:
                        self.a.writes.append(Use(var, span, node.id, "write"))
            self.a.loop_vars[node.id] = names
            for child in node.body:
                self.node(child, node.id)

    def value(self, value: Any, node_id: str) -> None:
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, ir.Ref):
                span = self.span(v.pointer)
                if span is not None:
                    self.a.reads.append(Use(_read_name(v), span, node_id, "read"))
            elif isinstance(v, ir.Template):
                self.template(v, node_id)
            elif isinstance(v, ir.ObjectExpr):
                stack.extend(f for _, f in v.fields)
            elif isinstance(v, ir.ListExpr):
                stack.extend(v.items)

    def template(self, t: Any, node_id: str) -> None:
        """Each `{{path}}` of a template gets the span of its own text where it can be found."""
        whole = self.span(t.pointer)
        refs = [p for p in t.parts if isinstance(p, ir.Ref)]
        if whole is None or not refs:
            return
        found = list(_placeholders(self.a.text, whole))
        for i, ref in enumerate(refs):
            span = found[i] if i < len(found) else whole
            self.a.reads.append(Use(_read_name(ref), span, node_id, "read"))


def _read_name(ref: Any) -> str:
    segs = ref.segments
    if segs and segs[0] == "state" and len(segs) > 1 and isinstance(segs[1], str):
        return f"state.{segs[1]}"
    return str(segs[0]) if segs else ref.text


def _values(node: Any) -> list[Any]:
    """The node's values, from the node table (`forgec.ir.nodes.node_values`)."""
    return [v for _, v in ir.node_values(node)]


def _placeholders(text: str, span: Span) -> Any:
    """The spans of the `{{...}}` placeholders inside SPAN's text, in order."""
    lines = text.split("\n")
    for line_no in range(span.line - 1, min(span.end_line, len(lines))):
        line = lines[line_no]
        start = span.column - 1 if line_no == span.line - 1 else 0
        end = span.end_column - 1 if line_no == span.end_line - 1 else len(line)
        for m in _PLACEHOLDER.finditer(line, start, end):
            yield Span(span.file, line_no + 1, m.start(1) + 1, line_no + 1, m.end(1) + 1)
