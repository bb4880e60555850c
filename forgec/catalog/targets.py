"""The two targets, made from the capability rows (`forgec.ir.capabilities`, where every fact
of a capability is spelled once): `talos` is the Tool Forge seed's eight capabilities (SPEC §5),
`talon` those plus the ten Talon host tools (SPEC §13), under their internal dotted names
(`memory.access`; the MCP layer shows the row's `mcp_name`, `memory_access`).

Both catalogs share the TALOS specs (the same objects). Import is cheap: plain data and
closures; the SQL, cron and URL rules import their libraries only when a value is checked.
"""

from __future__ import annotations

from forgec.catalog.base import CapabilitySpec, Catalog, spec_of
from forgec.ir.capabilities import rows_of

TALOS_SPECS: tuple[CapabilitySpec, ...] = tuple(spec_of(row) for row in rows_of("talos"))
HOST_SPECS: tuple[CapabilitySpec, ...] = tuple(
    spec_of(row) for row in rows_of("talon") if "talos" not in row.targets
)
CATALOGS: dict[str, Catalog] = {
    "talos": Catalog(name="talos", capabilities={spec.name: spec for spec in TALOS_SPECS}),
    "talon": Catalog(
        name="talon", capabilities={spec.name: spec for spec in (*TALOS_SPECS, *HOST_SPECS)}
    ),
}
