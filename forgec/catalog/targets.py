"""The two targets, made from the capability rows (`forgec.ir.capabilities`, where every fact
of a capability is spelled once): `talos` is the Tool Forge seed's eight capabilities (SPEC §5),
`talon` those plus the ten Talon host tools (SPEC §13), under their internal dotted names
(`memory.access`; the MCP layer shows the row's `mcp_name`, `memory_access`).

Both catalogs hold the rows themselves. Import is cheap: plain data; the SQL, cron and URL rules import their libraries only when a value is checked.
"""

from __future__ import annotations

from forgec.catalog.base import Catalog
from forgec.ir.capabilities import rows_of

CATALOGS: dict[str, Catalog] = {
    target: Catalog(name=target, capabilities={row.name: row for row in rows_of(target)})
    for target in ("talos", "talon")
}
