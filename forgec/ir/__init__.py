"""The shared vocabulary: IR nodes, spans, diagnostics and the code registry."""

from forgec.ir.diagnostics import Diagnostic, Severity, make
from forgec.ir.span import SourceMap, Span

__all__ = ["Diagnostic", "Severity", "SourceMap", "Span", "make"]
