"""Capability steps: known names, literal inputs, and compensation pairs (SPEC §5, §12).

Every capability step is checked, reachable or not (a later edit may make it reachable):

- The name must be in the target's catalog, else `FORGE_CAPABILITY_UNKNOWN` with the catalog's
  hint (`forgec.catalog.base.unknown_capability_hint`): the dotted name of an MCP name
  (`memory_access` → `memory.access`), the other target when only that one has it, or the
  closest name. An unknown step gets no input check (one cause, one code).
- The input goes to the spec's `check_input` as SPEC §12 asks: for an object input, the members
  that are literals with their values, the members that are expressions by name only (present,
  checked at run time). Each problem is `FORGEC_CAPABILITY_INPUT` at the pointer of the field it
  concerns. A member that is an object holding expressions is computed, and its literal members
  are checked too (each expression standing as one). A field whose own shape another field
  chooses (`subagent.invoke`'s `input`, by the built-in sub-agent its `name` names) is checked
  against that shape on its literal members, and a name with no shape is the shape's warning
  (`FORGEC_SUBAGENT_UNKNOWN`). The size limit is the spec's to check and it checks it only when
  nothing is computed, that is when the whole input is literal. An input that is a `$ref` is checked at run time; a
  template or a list can never be an object and is reported here.
- Compensation: a step whose capability has no undo may not name one
  (`FORGE_INVALID_COMPENSATION`, alone, whatever the name); otherwise the name must be in the
  target's catalog (`FORGE_COMPENSATION_UNKNOWN`) and be the capability's undo
  (`FORGE_COMPENSATION_MISMATCH`). A step with an unknown capability only gets the "unknown
  name" check of its compensation: whether it matches cannot be known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forgec.catalog import Catalog, get_catalog
from forgec.catalog.base import likely_capability, unknown_capability_hint
from forgec.ir.capabilities import ROWS, Capability
from forgec.ir.diagnostics import Fix, replace_fix, suggestion
from forgec.ir.nodes import (
    CapabilityNode,
    ListExpr,
    Literal,
    Node,
    ObjectExpr,
    Template,
    Value,
    nodes_of_type,
)
from forgec.ir.pointer import join
from forgec.ir.shapes import InputProblem
from forgec.passes.context import PassContext
from forgec.passes.graph import shown


def capability_nodes(nodes: tuple[Node, ...]) -> list[CapabilityNode]:
    """Every capability step, loop bodies included, in manifest order."""
    return nodes_of_type(nodes, CapabilityNode)


def input_parts(value: Value | None) -> tuple[Any, frozenset[str]] | None:
    """What `check_input` sees of an input: (literal part, names of computed fields).

    None when nothing is known statically (the input is one `$ref`, or absent).
    """
    kind = type(value)
    if kind is Literal:
        return value.value, frozenset()  # type: ignore[union-attr]
    if kind is ObjectExpr:
        literal: dict[str, Any] = {}
        computed: list[str] = []
        for k, m in value.fields:  # type: ignore[union-attr]
            if type(m) is Literal:
                literal[k] = m.value
            else:
                computed.append(k)
        return literal, frozenset(computed)
    return None


def literal_fields(value: Value | None) -> Mapping[str, Any]:
    """The literal fields of an object input (what a marks resolver decides on)."""
    parts = input_parts(value)
    if parts is None or (type(parts[0]) is not dict and not isinstance(parts[0], Mapping)):
        return {}
    return parts[0]


def check_capabilities(ctx: PassContext) -> None:
    flow = ctx.manifest.flow
    if flow is None:
        return
    for node in capability_nodes(flow.nodes):
        name = node.capability
        if name is None:
            continue  # missing or ill-typed: the structure pass said so
        spec = ctx.catalog.get(name)
        if spec is None:
            _unknown(ctx, node, name)
            if node.compensation is not None and node.compensation not in ctx.catalog:
                _compensation_unknown(ctx, node, node.compensation, None)
            continue
        _check_input(ctx, node, spec)
        _check_compensation(ctx, node, spec)


def _other_catalog(catalog: Catalog) -> Catalog | None:
    other = "talon" if catalog.name == "talos" else "talos"
    try:
        return get_catalog(other)
    except (ValueError, ImportError):
        return None


_HAS_UNDO = [row.name for row in ROWS if row.undo is not None]
_UNDOABLE = ", ".join(_HAS_UNDO[:-1]) + " and " + _HAS_UNDO[-1]


def _unknown(ctx: PassContext, node: CapabilityNode, name: str) -> None:
    pointer = join(node.pointer, "capability")
    meant = likely_capability(ctx.catalog, name)
    ctx.report(
        "FORGE_CAPABILITY_UNKNOWN",
        pointer,
        f"`{shown(name)}` is not a capability of target `{ctx.catalog.name}`",
        hint=unknown_capability_hint(ctx.catalog, name)
        or f"known capabilities: {', '.join(sorted(ctx.catalog.capabilities))}",
        fixes=(replace_fix(pointer, meant),) if meant is not None else (),
    )


def _check_input(ctx: PassContext, node: CapabilityNode, spec: Capability) -> None:
    value = node.input
    base = node.pointer + "/input"
    if isinstance(value, (Template, ListExpr)):
        kind = "a template (a string)" if isinstance(value, Template) else "a list"
        ctx.report(
            "FORGEC_CAPABILITY_INPUT",
            base,
            f"`{spec.name}` input: the input must be an object, not {kind}",
        )
        return
    parts = input_parts(value)
    if parts is None:
        return  # a `$ref` (checked at run time) or a misplaced credential (FORGE_REF_UNSAFE)
    literal, computed = parts
    if computed and type(value) is ObjectExpr:
        literal = _with_literal_members(value, literal)
    try:
        problems = spec.shape.check(literal, computed)
    except Exception as error:  # a checker bug must not hide the other diagnostics
        problems = []
        ctx.report(
            "FORGEC_CAPABILITY_INPUT",
            base,
            f"`{spec.name}` input could not be checked ({type(error).__name__}: {error})",
        )
    if spec.shape.nested:
        problems = [*problems, *spec.shape.unchosen(literal)]
    if computed and type(value) is ObjectExpr:
        problems = [*problems, *_template_url_problems(value, spec)]
    for problem in problems:
        at = join(base, *problem.path)
        ctx.report(
            problem.code or "FORGEC_CAPABILITY_INPUT",
            at,
            f"`{spec.name}` input: {problem.message}",
            key=problem.rename,
            fixes=(replace_fix(at, problem.suggestion, key=problem.rename),)
            if problem.suggestion is not None
            else (),
        )


def _template_url_problems(value: ObjectExpr, spec: Capability) -> list[InputProblem]:
    """A URL field written as a template: its literal parts checked like a literal URL's
    (`forgec.catalog.urls.check_url_template`; SPEC §24). One pass over the template's parts."""
    fields = spec.shape.fields
    out: list[InputProblem] = []
    for key, member in value.fields:
        if type(member) is not Template:
            continue
        declared = fields.get(key)
        if declared is None or declared.validate != "url":
            continue
        from forgec.catalog.urls import check_url_template

        out.extend(
            InputProblem((key,), f"`{key}`: {message}")
            for message in check_url_template(member.parts)
        )
    return out


# stands for an expression inside a member's literal part: every check skips it as computed
_COMPUTED: Any = {"$ref": ""}


def _with_literal_members(value: ObjectExpr, literal: dict[str, Any]) -> dict[str, Any]:
    """The literal part of an input, with each member that is an object holding expressions
    given as that object's literal members (each expression standing as `_COMPUTED`); the member
    stays computed, so its literal values are checked now and the rest, with the size, at run
    time (a literal `limit` beside a computed `query` in a sub-agent's `input`)."""
    out: dict[str, Any] | None = None
    for key, member in value.fields:
        if type(member) is ObjectExpr:
            out = dict(literal) if out is None else out
            out[key] = {k: m.value if type(m) is Literal else _COMPUTED for k, m in member.fields}
    return literal if out is None else out


def _check_compensation(ctx: PassContext, node: CapabilityNode, spec: Capability) -> None:
    comp = node.compensation
    if comp is None or (comp == spec.undo and comp in ctx.catalog):
        return  # none, or the right one
    pointer = join(node.pointer, "compensation")
    if spec.undo is None:
        ctx.report(
            "FORGE_INVALID_COMPENSATION",
            pointer,
            f"`{spec.name}` cannot be undone, so it cannot declare a compensation (`{shown(comp)}`)",
            hint=f"remove `compensation`; only {_UNDOABLE} have an undo",
        )
        return
    if comp not in ctx.catalog:
        _compensation_unknown(ctx, node, comp, spec)
        return
    if comp != spec.undo:
        ctx.report(
            "FORGE_COMPENSATION_MISMATCH",
            pointer,
            f"`{comp}` does not undo `{spec.name}`; its undo is `{spec.undo}`",
            hint=f'use "compensation": "{spec.undo}"',
        )


def _compensation_unknown(
    ctx: PassContext, node: CapabilityNode, comp: str, spec: Capability | None
) -> None:
    other = _other_catalog(ctx.catalog)
    if other is not None and comp in other:
        message = (
            f"compensation `{shown(comp)}` is not a capability of target `{ctx.catalog.name}` "
            f"(only of `{other.name}`)"
        )
    else:
        message = f"compensation `{shown(comp)}` is not a capability of target `{ctx.catalog.name}`"
    pointer = join(node.pointer, "compensation")
    fixes: tuple[Fix, ...] = ()
    if spec is not None and spec.undo is not None:
        hint: str | None = f"`{spec.name}` is undone by `{spec.undo}`"
    else:
        hint, fixes = suggestion(comp, sorted(ctx.catalog.capabilities), pointer)
    ctx.report("FORGE_COMPENSATION_UNKNOWN", pointer, message, hint=hint, fixes=fixes)
