"""What a capability is, to the compiler and to the host: one `CapabilitySpec` per name.

A target (`talos`, `talon`) is a `Catalog`: a mapping from the internal dotted name to its spec.
Each spec is made from the capability's row (`forgec.ir.capabilities`, where every fact is
spelled once): the marks (power, risk, label; possibly depending on the literal `action` /
`operation` of the input), the input size limit, the undo pair, and the row's shape as the
static input check the compiler runs on literal fields and the host again on every call.

`suggest` turns an unknown capability name into the likely one (MCP names such as
`memory_access` map to their dotted internal names; otherwise the closest name by `difflib`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from forgec.ir.capabilities import Capability, StepMarks
from forgec.ir.shapes import InputProblem

__all__ = ["CapabilitySpec", "Catalog", "InputProblem", "StepMarks", "spec_of", "suggest"]


# Marks resolver: given the input's literal fields (a dict of the fields that are literal, the
# non-literal ones absent) returns the marks; when the deciding field is not literal it must
# return the worst case.
MarksResolver = Callable[[Mapping[str, Any]], StepMarks]

# Static input checker: given the input's literal fields (non-literal fields are present in
# `computed` by name only) returns every problem. Used at compile time on literals and at run
# time (with `computed` empty) on the real input.
InputChecker = Callable[[Mapping[str, Any], frozenset[str]], list[InputProblem]]


@attrs.frozen
class CapabilitySpec:
    name: str
    summary: str
    input_limit: int  # bytes of the compact UTF-8 JSON input
    marks: MarksResolver
    check_input: InputChecker
    undo: str | None = None  # the capability that compensates this one
    needs_network: bool = False
    mcp_name: str | None = None  # Talon host tools: the MCP name (memory_access)
    input_schema: Mapping[str, Any] = attrs.field(factory=dict)  # JSON Schema of the input
    result_schema: Mapping[str, Any] = attrs.field(factory=dict)  # JSON Schema of the result
    # Whole-input check at the bridge (every value real data, size included); when None the
    # static checker is used with nothing computed.
    runtime_check: Callable[[Any], list[InputProblem]] | None = None
    row: Capability | None = None  # the row the spec is made from

    def check_runtime_input(self, input: Any) -> list[InputProblem]:
        """Every problem with a run-time input (already evaluated), as the host checks it."""
        if self.runtime_check is not None:
            return self.runtime_check(input)
        return self.check_input(input, frozenset())


_DRAFT_07 = "http://json-schema.org/draft-07/schema#"


def spec_of(row: Capability) -> CapabilitySpec:
    """The catalog's view of a row: its checker, run-time twin and schemas from the shape."""
    shape = row.shape
    return CapabilitySpec(
        name=row.name,
        summary=row.summary,
        input_limit=shape.limit,
        marks=row.step_marks,
        check_input=shape.check,
        undo=row.undo,
        needs_network=row.needs_network,
        mcp_name=row.mcp_name,
        input_schema={"$schema": _DRAFT_07, **shape.schema()},
        result_schema={"$schema": _DRAFT_07, **row.result},
        runtime_check=functools.partial(shape.check, computed=frozenset(), runtime=True),
        row=row,
    )


@attrs.frozen
class Catalog:
    name: str
    capabilities: Mapping[str, CapabilitySpec]

    def get(self, name: str) -> CapabilitySpec | None:
        return self.capabilities.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.capabilities

    def by_mcp_name(self, mcp_name: str) -> CapabilitySpec | None:
        """The Talon host tool exposed under an MCP name (`memory_access`), if any."""
        for spec in self.capabilities.values():
            if spec.mcp_name == mcp_name:
                return spec
        return None


def _squash(name: str) -> str:
    """A name with case and separators removed: `Tasks_Set-Status` ~ `tasks.setStatus`."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _same_name(catalog: Catalog, name: str) -> str | None:
    """The catalog's name for `name` written as an MCP name or with other case/separators."""
    spec = catalog.by_mcp_name(name)
    if spec is not None:
        return spec.name
    squashed = _squash(name)
    if not squashed:
        return None
    for known, known_spec in catalog.capabilities.items():
        if squashed in (_squash(known), _squash(known_spec.mcp_name or "")):
            return known
    return None


def suggest(catalog: Catalog, name: str) -> str | None:
    """The capability a person probably meant by an unknown `name`, or None.

    Order: an MCP name of the catalog (`background_agent` → `subagent.background`); the same
    name up to case and separators (`tasks_create`, `Tasks.SetStatus`); the closest by difflib.
    """
    if not isinstance(name, str) or not name or name in catalog.capabilities:
        return None
    same = _same_name(catalog, name)
    if same is not None:
        return same
    from forgec.ir.suggest import closest

    return closest(name, catalog.capabilities)


def likely_capability(catalog: Catalog, name: str) -> str | None:
    """The capability of this catalog an unknown `name` most likely means (the fix), or None."""
    if not isinstance(name, str) or not name:
        return None
    return _same_name(catalog, name) or suggest(catalog, name)


def unknown_capability_hint(catalog: Catalog, name: str) -> str | None:
    """The hint for FORGE_CAPABILITY_UNKNOWN: the likely name here, or the target that has it."""
    if not isinstance(name, str) or not name:
        return None
    same = _same_name(catalog, name)
    if same is not None:
        return f"did you mean `{same}`?"
    from forgec.catalog import TARGETS, get_catalog

    for target in TARGETS:
        if target != catalog.name:
            found = _same_name(get_catalog(target), name)
            if found is not None:
                return f"`{found}` is a capability of the `{target}` target (`--target {target}`)"
    guess = suggest(catalog, name)
    return f"did you mean `{guess}`?" if guess is not None else None
