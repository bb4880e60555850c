"""What each LSP request answers, as plain functions of an `Analysis`.

Every answer is built from the report `forgec.check` produced: diagnostics keep the CLI's
codes, messages and hints; hovers read the catalog's marks and the same worst-case rule the
checker uses; quick fixes apply the fixes the checker attached to its diagnostics (a "did you
mean" replacement, a missing field, an undeclared state field), never reading the message.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from forgec.ir import nodes as ir
from forgec.ir.span import Span
from forgec.lsp.analysis import Analysis, NodeDef, Use
from forgec.lsp.edits import minimal_edits
from forgec.lsp.positions import LineIndex, Point, span_points

SOURCE = "forgec"


# -- positions ---------------------------------------------------------------------------------


def to_range(index: LineIndex, span: Span) -> lsp.Range:
    start, end = span_points(span)
    sl, sc = index.to_client(start)
    el, ec = index.to_client(end)
    return lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec))


def _loc(a: Analysis, index: LineIndex, span: Span) -> lsp.Location:
    return lsp.Location(uri=a.uri, range=to_range(index, span))


# -- diagnostics ---------------------------------------------------------------------------


def explain_uri(code: str) -> str:
    """A file holding `forgec explain CODE`, written on first use, as a `file:` URI.

    Editors open a file link in place (a custom scheme would need a client extension), so the
    code link works in every client; the file is rewritten when forgec's version changes.
    """
    from forgec import __version__
    from forgec.ir.codes import REGISTRY

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(base) / "forgec" / "explain" / __version__
    path = folder / f"{code}.md"
    if not path.exists():
        doc = REGISTRY.get(code)
        body = f"# {code}\n\n{doc.summary}\n\n{doc.doc}\n" if doc else f"# {code}\n"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        except OSError:
            pass
    return path.as_uri()


def diagnostics(a: Analysis, index: LineIndex) -> list[lsp.Diagnostic]:
    out = []
    report = a.report
    for d in report.diagnostics:
        span = d.span
        rng = (
            to_range(index, span)
            if span is not None
            else lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
        )
        message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
        out.append(
            lsp.Diagnostic(
                range=rng,
                message=message,
                severity=lsp.DiagnosticSeverity.Error
                if d.is_error
                else lsp.DiagnosticSeverity.Warning,
                code=d.code,
                code_description=lsp.CodeDescription(href=explain_uri(d.code)),
                source=SOURCE,
                related_information=_related(a, index, d) or None,
                data={"path": d.path, "hint": d.hint, "fixes": [f.to_json() for f in d.fixes]},
            )
        )
    return out


def _related(a: Analysis, index: LineIndex, d: Any) -> list[lsp.DiagnosticRelatedInformation]:
    """Other places the problem involves: both duplicates, every node of a cycle, a flow's path."""
    related: list[lsp.DiagnosticRelatedInformation] = []
    source_map = a.report.source_map
    # the checker's own `related` (the other duplicate, the nodes of a cycle)
    for other in d.related:
        span = source_map.span(other.pointer) if source_map is not None else None
        if span is not None and span != d.span:
            related.append(_info(a, index, span, other.note))
    names = re.findall(r"`([A-Za-z][A-Za-z0-9_-]*)`", d.message)
    if d.code.startswith("FORGEC_FLOW_"):
        wanted = "private:" if d.code == "FORGEC_FLOW_PRIVATE_EGRESS" else "external:"
        for flow in getattr(a.report.facts, "flows", ()) or ():
            if getattr(flow, "node", None) not in names or not flow.source.startswith(wanted):
                continue
            for step in getattr(flow, "path", ()):
                for nd in a.nodes.get(step, [])[:1]:
                    if nd.id_span is not None:
                        text = f"{flow.source} reaches `{step}`"
                        related.append(_info(a, index, nd.id_span, text))
            break
    return related


def _info(
    a: Analysis, index: LineIndex, span: Span, message: str
) -> lsp.DiagnosticRelatedInformation:
    return lsp.DiagnosticRelatedInformation(location=_loc(a, index, span), message=message)


# -- hover ---------------------------------------------------------------------------------------


def hover(a: Analysis, index: LineIndex, point: Point) -> lsp.Hover | None:
    symbol = a.symbol_at(point)
    if symbol is not None and symbol[0] == "variable":
        _, name, use = symbol
        assert isinstance(use, Use)
        return lsp.Hover(
            contents=_markdown(_variable_text(a, name)), range=to_range(index, use.span)
        )
    node: NodeDef | None
    if symbol is not None:
        defs = a.nodes.get(symbol[1], [])
        node = defs[0] if defs else None
    else:
        node = a.node_at(point)
    if node is None:
        return None
    rng = to_range(index, node.id_span) if node.id_span is not None else None
    return lsp.Hover(contents=_markdown(_node_text(a, node)), range=rng)


def _markdown(text: str) -> lsp.MarkupContent:
    return lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text)


def _node_text(a: Analysis, d: NodeDef) -> str:
    from forgec.catalog import get_catalog

    lines = [f"**{d.id}** — `{d.kind}` step" + (f" in the body of `{d.loop}`" if d.loop else "")]
    node = d.node
    if isinstance(node, ir.CapabilityNode) and node.capability:
        spec = get_catalog(a.target).get(node.capability)
        if spec is None:
            lines.append(f"capability `{node.capability}`: not in the `{a.target}` catalog")
        else:
            from forgec.passes.marks import literal_fields

            marks = spec.step_marks(literal_fields(node.input))
            lines.append(f"capability `{spec.name}`: {spec.summary}")
            label = f", needs the label `{marks.label}`" if marks.label else ""
            lines.append(f"power **{marks.power}**, risk **{marks.risk}**{label}")
            lines.append(f"input limit {spec.input_limit} bytes of compact JSON")
            if spec.undo:
                lines.append(f"can be undone with `{spec.undo}`")
    elif isinstance(node, ir.LlmNode) and node.op:
        lines.append(f"model step `{node.op}`")
    worst = worst_case_from(a, d.id)
    if worst is not None:
        lines.append(f"worst case from here: {worst} transition{'s' if worst != 1 else ''}")
    return "\n\n".join(lines)


def worst_case_from(a: Analysis, node_id: str) -> int | None:
    """SPEC §12's worst case W, from one node: the same rule the graph pass counts."""
    by_id = {nid: defs[0] for nid, defs in a.nodes.items() if len(defs) == 1}
    memo: dict[str, int | None] = {}

    def w(nid: str | None, depth: int = 0) -> int | None:
        if nid is None:
            return 0
        if nid in memo:
            return memo[nid]
        d = by_id.get(nid)
        if d is None or depth > 256:
            return None
        memo[nid] = None  # a cycle reads as unknown
        node = d.node
        result: int | None
        if isinstance(node, ir.IfNode):
            t, e = w(node.then, depth + 1), w(node.else_, depth + 1)
            result = None if t is None or e is None else 1 + max(t, e)
        elif isinstance(node, ir.ReturnNode | ir.FailNode):
            result = 1
        elif isinstance(node, ir.ForeachNode):
            body = w(node.body[0].id, depth + 1) if node.body else 0
            rest = w(node.next, depth + 1)
            items = node.max_items or 0
            result = None if body is None or rest is None else 1 + items * body + rest
        else:
            rest = w(getattr(node, "next", None), depth + 1)
            result = None if rest is None else 1 + rest
        memo[nid] = result
        return result

    return w(node_id)


def _variable_text(a: Analysis, name: str) -> str:
    if name == "input":
        fields = a.input_fields()
        shown = ", ".join(f"`{f}`" for f in fields) or "none declared"
        return f"**input** — the caller's input (fields: {shown})"
    writers = [u for u in a.writes if u.name == name]
    if name.startswith("state."):
        head = f"**{name}** — a state field" + (
            "" if name[6:] in a.state_fields() else " (not declared)"
        )
    else:
        head = f"**{name}** — a flow variable"
    if not writers:
        return head + "\n\nwritten by no step"
    where = ", ".join(f"`{u.node}` (line {u.span.line})" for u in writers)
    return f"{head}\n\nwritten by {where}"


# -- navigation --------------------------------------------------------------------------


def definition(a: Analysis, index: LineIndex, point: Point) -> list[lsp.Location]:
    symbol = a.symbol_at(point)
    if symbol is None:
        return []
    kind, name, _ = symbol
    if kind == "node":
        return [_loc(a, index, d.id_span) for d in a.nodes.get(name, []) if d.id_span is not None]
    spans = [u.span for u in a.writes if u.name == name]
    if not spans:
        spans = _declaration(a, name)
    return [_loc(a, index, s) for s in spans]


def _declaration(a: Analysis, name: str) -> list[Span]:
    """Where `input` and `state.x` are declared (the input schema, the state field)."""
    source_map = a.report.source_map
    if source_map is None:
        return []
    pointer = (
        "/inputSchema"
        if name == "input"
        else f"/state/fields/{name[6:]}"
        if name.startswith("state.")
        else None
    )
    span = source_map.span(pointer, key=True) if pointer else None
    return [span] if span is not None else []


def references(
    a: Analysis, index: LineIndex, point: Point, include_declaration: bool
) -> list[lsp.Location]:
    symbol = a.symbol_at(point)
    if symbol is None:
        return []
    kind, name, _ = symbol
    spans: list[Span] = []
    if kind == "node":
        if include_declaration:
            spans += [d.id_span for d in a.nodes.get(name, []) if d.id_span is not None]
        spans += [u.span for u in a.edges if u.name == name]
    else:
        if include_declaration:
            spans += [u.span for u in a.writes if u.name == name]
        spans += [u.span for u in a.reads if u.name == name]
    return [_loc(a, index, s) for s in spans]


def symbols(a: Analysis, index: LineIndex) -> list[lsp.DocumentSymbol]:
    kinds = {
        "foreach": lsp.SymbolKind.Array,
        "if": lsp.SymbolKind.Boolean,
        "return": lsp.SymbolKind.Event,
        "fail": lsp.SymbolKind.Event,
        "capability": lsp.SymbolKind.Function,
        "llm": lsp.SymbolKind.Function,
        "set": lsp.SymbolKind.Variable,
    }
    made: dict[str, lsp.DocumentSymbol] = {}
    children: dict[str, list[lsp.DocumentSymbol]] = {}
    top: list[lsp.DocumentSymbol] = []
    for d in a.node_defs():
        if d.span is None or d.id_span is None:
            continue
        detail = d.kind
        if isinstance(d.node, ir.CapabilityNode) and d.node.capability:
            detail = f"call {d.node.capability}"
        sym = lsp.DocumentSymbol(
            name=d.id,
            kind=kinds.get(d.kind, lsp.SymbolKind.Object),
            range=to_range(index, d.span),
            selection_range=to_range(index, d.id_span),
            detail=detail,
            children=children.setdefault(d.id, []) if d.kind == "foreach" else None,
        )
        made.setdefault(d.id, sym)
        if d.loop is not None and d.loop in children:
            children[d.loop].append(sym)
        else:
            top.append(sym)
    return top


# -- completion ---------------------------------------------------------------------------------

_EDGE_BEFORE = re.compile(
    r'(?:->|\bthen|\belse|\bentry|"(?:next|then|else|entry)"\s*:)\s*"?[A-Za-z0-9_-]*$'
)
_CAP_BEFORE = re.compile(r'(?:\bcall|\bundo|"(?:capability|compensation)"\s*:)\s*"?[A-Za-z0-9_.]*$')
_VAR_BEFORE = re.compile(r'(?:\$|\{\{\s*|"\$ref"\s*:\s*")([A-Za-z0-9_.\[\]]*)$')
_KEY_BEFORE = re.compile(r'(?:^|[{,])\s*"[A-Za-z]*$')


def completion(
    a: Analysis, index: LineIndex, point: Point, known: Analysis | None
) -> list[lsp.CompletionItem]:
    """Candidates for what is being typed at POINT.

    KNOWN is the last analysis that produced an index (the text being typed is often broken);
    its node ids and variables stand in when the current one has none.
    """
    line = index.lines[point.line] if point.line < len(index.lines) else ""
    before = line[: point.column]
    source = a if a.nodes or known is None else known
    if m := _VAR_BEFORE.search(before):
        typed = m.group(1)
        if typed.startswith("input."):
            return _items(source.input_fields(), lsp.CompletionItemKind.Field, "input field")
        if typed.startswith("state."):
            return _items(source.state_fields(), lsp.CompletionItemKind.Field, "state field")
        names = ["input", "state", *source.variables()]
        node = a.node_at(point) or (known.node_at(point) if known else None)
        if node is not None and node.loop is not None:
            names += source.loop_vars.get(node.loop, [])
        names = [n for n in dict.fromkeys(names) if not n.startswith("state.")]
        return _items(names, lsp.CompletionItemKind.Variable, "variable")
    if _CAP_BEFORE.search(before):
        from forgec.catalog import get_catalog

        catalog = get_catalog(a.target)
        return [
            lsp.CompletionItem(
                label=name, kind=lsp.CompletionItemKind.Function, detail=spec.summary
            )
            for name, spec in sorted(catalog.capabilities.items())
        ]
    if _EDGE_BEFORE.search(before):
        # an edge stays in its scope: the top level's nodes, or the same loop body's
        node = a.node_at(point) or (known.node_at(point) if known else None)
        scope = node.loop if node is not None else None
        here = [n for n, defs in source.nodes.items() if any(d.loop == scope for d in defs)]
        return _items(sorted(here), lsp.CompletionItemKind.Reference, "node")
    if a.form == "talostool" and _KEY_BEFORE.search(before):
        node = a.node_at(point) or (known.node_at(point) if known else None)
        if node is not None:
            return _items(
                node_fields(node.kind), lsp.CompletionItemKind.Property, f"{node.kind} field"
            )
    return []


def node_fields(kind: str) -> list[str]:
    """The fields a node of KIND takes, from the canonical field table."""
    from forgec.ir.rules import NODE_FIELDS

    return [f.name for f in NODE_FIELDS.get(kind, ())]


def _items(names: list[str], kind: lsp.CompletionItemKind, detail: str) -> list[lsp.CompletionItem]:
    return [lsp.CompletionItem(label=n, kind=kind, detail=detail) for n in names]


# -- code actions ------------------------------------------------------------------------------


def code_actions(
    a: Analysis, index: LineIndex, rng: lsp.Range, context: lsp.CodeActionContext
) -> list[lsp.CodeAction]:
    actions: list[lsp.CodeAction] = []
    for diag in context.diagnostics:
        if diag.source != SOURCE:
            continue
        data = diag.data if isinstance(diag.data, dict) else {}
        # the checker's fixes, as data (never read out of the message)
        fixes = [f for f in data.get("fixes") or () if isinstance(f, dict)]
        for fix in fixes:
            if fix.get("kind") == "replace" and isinstance(fix.get("value"), str):
                actions.append(_replace_fix(a, index, diag, fix["value"]))
            elif fix.get("kind") == "insert" and isinstance(fix.get("field"), str):
                pointer = f"{fix.get('pointer') or ''}/{fix['field']}"
                value = fix.get("value")
                if fix["field"] == "createdAt":
                    value = _now()  # the checker's placeholder is fixed; an editor knows the time
                action = _structural_fix(
                    a, index, diag, pointer, fix["field"], value, fix.get("title")
                )
                if action is not None:
                    actions.append(action)
        if fixes:
            continue
    actions.extend(_conversions(a))
    return actions


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _replace_fix(a: Analysis, index: LineIndex, diag: lsp.Diagnostic, word: str) -> lsp.CodeAction:
    start = index.from_client(diag.range.start.line, diag.range.start.character)
    end = index.from_client(diag.range.end.line, diag.range.end.character)
    old = a.text[index.offset(start) : index.offset(end)]
    new = json.dumps(word) if old.startswith('"') else word
    edit = lsp.TextEdit(range=diag.range, new_text=new)
    return lsp.CodeAction(
        title=f"Change to `{word}`",
        kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[diag],
        is_preferred=True,
        edit=lsp.WorkspaceEdit(changes={a.uri: [edit]}),
    )


def _structural_fix(
    a: Analysis,
    index: LineIndex,
    diag: lsp.Diagnostic,
    pointer: str,
    field: str,
    value: Any = None,
    title: str | None = None,
) -> lsp.CodeAction | None:
    """Add a missing required field to the document's JSON and write the document anew."""
    raw = a.report.raw
    if not isinstance(raw, dict):
        return None
    import copy

    from forgec.ir.pointer import split

    doc = copy.deepcopy(raw)
    parent: Any = doc
    parts = split(pointer)[:-1]
    for part in parts:
        if isinstance(parent, list) and part.isdigit() and int(part) < len(parent):
            parent = parent[int(part)]
        elif isinstance(parent, dict) and part in parent:
            parent = parent[part]
        else:
            return None
    if not isinstance(parent, dict):
        return None
    parent[field] = value
    return _rewrite(a, index, diag, title or f"Add the missing `{field}`", doc)


def _rewrite(
    a: Analysis, index: LineIndex, diag: lsp.Diagnostic, title: str, doc: dict[str, Any]
) -> lsp.CodeAction | None:
    """A quick fix that writes the changed manifest DOC in the document's own form, keeping its
    comments, as the few line edits that differ."""
    text = render_form(doc, a.form, trivia=a.trivia())
    if text is None:
        return None
    return lsp.CodeAction(
        title=title,
        kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[diag],
        edit=lsp.WorkspaceEdit(changes={a.uri: minimal_edits(index, text)}),
    )


def render_form(doc: dict[str, Any], form: str, *, trivia: Any = None) -> str | None:
    """A manifest value as canonical text of FORM (None when it cannot be written so); TRIVIA
    (the comments of the `.forge` text it came from) is written back."""
    from forgec.frontend.canonical import dumps_canonical
    from forgec.frontend.dsl_format import format_forge

    try:
        return format_forge(doc, trivia) if form == "forge" else dumps_canonical(doc)
    except Exception:  # a broken manifest the writer cannot lay out: no edit rather than a crash
        return None


def _conversions(a: Analysis) -> list[lsp.CodeAction]:
    """ "Convert this file": write the other form beside it (only for a document that checks)."""
    if not a.report.ok or not isinstance(a.report.raw, dict):
        return []
    other = "talostool" if a.form == "forge" else "forge"
    text = render_form(a.report.raw, other)
    if text is None:
        return []
    dropped = len(a.trivia().comments()) if a.form == "forge" and a.trivia() else 0
    base = a.uri.rsplit(".", 1)[0] if "." in a.uri.rsplit("/", 1)[-1] else a.uri
    new_uri = f"{base}.{other}"
    edit = lsp.WorkspaceEdit(
        document_changes=[
            lsp.CreateFile(uri=new_uri, options=lsp.CreateFileOptions(overwrite=True)),
            lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                    uri=new_uri, version=None
                ),
                edits=[
                    lsp.TextEdit(
                        range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), new_text=text
                    )
                ],
            ),
        ]
    )
    return [
        lsp.CodeAction(
            title=f"Convert this file to .{other}"
            + (f" ({dropped} comment{'s' if dropped != 1 else ''} not kept)" if dropped else ""),
            kind=lsp.CodeActionKind.RefactorRewrite,
            edit=edit,
        )
    ]


# -- formatting -----------------------------------------------------------------------------


def formatting(a: Analysis, index: LineIndex) -> list[lsp.TextEdit]:
    """`forgec fmt`'s canonical text of the document's own form, comments kept, as the line
    edits that differ; nothing while it has errors."""
    if not a.report.ok or not isinstance(a.report.raw, dict):
        return []
    text = render_form(a.report.raw, a.form, trivia=a.trivia())
    if text is None:
        return []
    from forgec.frontend.dsl_format import same_text

    if same_text(a.text, text):
        return []
    return minimal_edits(index, text)
