"""The `talos` target: the Tool Forge seed's eight capabilities (SPEC §5), from their rows in
`forgec.ir.capabilities` (inputs, marks, undo pairs, results: each spelled there once)."""

from __future__ import annotations

from forgec.catalog.base import CapabilitySpec, Catalog, spec_of
from forgec.ir.capabilities import KIB, check_date, rows_of

SPECS: tuple[CapabilitySpec, ...] = tuple(spec_of(row) for row in rows_of("talos"))
CATALOG = Catalog(name="talos", capabilities={spec.name: spec for spec in SPECS})

__all__ = ["CATALOG", "KIB", "SPECS", "check_date"]
