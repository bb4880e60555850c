"""The backend: lowering a checked tool to a `forgec.runtime.Program`, and reading it back.

`lower_report(report)` is what `forgec.api.lower` calls; `lower_manifest` lowers an IR
manifest directly (tests build IR by hand). The opcode table lives in `forgec.runtime.opcodes`
(the VM needs it and the runtime must not import the compiler) and is re-exported here.
"""

from __future__ import annotations

from typing import Any

from forgec.backend.disasm import disassemble
from forgec.backend.invariants import INVARIANTS, check_invariants
from forgec.backend.lower import LoweringError, linearize, lower_manifest
from forgec.runtime.opcodes import OPS, Op, OperandKind
from forgec.runtime.program import Program


def lower_report(report: Any) -> Program:
    """Lower the IR of a checked `forgec.api.Report` (one with no error)."""
    if report.ir is None:
        raise LoweringError("the report has no IR to lower")
    errors = [d for d in report.diagnostics if d.is_error]
    if errors:
        raise LoweringError(f"the tool has {len(errors)} error(s); check it first")
    facts = report.facts
    return lower_manifest(
        report.ir,
        marks=report.marks,
        source_map=report.source_map,
        flow_joins=getattr(facts, "flow_joins", None) if facts is not None else None,
    )


__all__ = [
    "INVARIANTS",
    "OPS",
    "LoweringError",
    "Op",
    "OperandKind",
    "Program",
    "check_invariants",
    "disassemble",
    "linearize",
    "lower_manifest",
    "lower_report",
]
