"""What a capability is, to the compiler and to the host: one `CapabilitySpec` per name.

A target (`talos`, `talon`) is a `Catalog`: a mapping from the internal dotted name to its spec.
The spec gives the marks (power, risk, label; possibly depending on the literal `action` /
`operation` of the input), the input size limit, the undo pair, and a static input check used by
the compiler on literal fields and by the host again on every call at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs


@attrs.frozen
class InputProblem:
    """One thing wrong with a capability input; `path` is relative to the input (tokens)."""

    path: tuple[str | int, ...]
    message: str


@attrs.frozen
class StepMarks:
    power: str  # Read | Write | Send | Network | Delegate
    risk: str  # R0..R4
    label: str | None  # Talon capability label needed, None for TALOS capabilities


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


@attrs.frozen
class Catalog:
    name: str
    capabilities: Mapping[str, CapabilitySpec]

    def get(self, name: str) -> CapabilitySpec | None:
        return self.capabilities.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.capabilities
