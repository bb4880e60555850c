"""The `talon` target: everything of `talos` plus the ten Talon host tools (SPEC §5, §13), from
their rows in `forgec.ir.capabilities`.

Host tools are named by their internal dotted names (`memory.access`); the row's `mcp_name` is
the name the MCP layer shows (`memory_access`; `subagent.background` is `background_agent`).
Their parameters follow `seeds/host-tools.txt`, checked where literal and again at the bridge by
the same shape: required fields per literal `action`/`operation`, `prompt`/`promptFile`
exclusive, the lengths the host keeps, cron expressions (`forgec.catalog.cron`), SQL
(`forgec.catalog.sql`), URLs (`forgec.catalog.urls`), host caps (`timeoutMs` 120000,
`db.query` `limit` 1000: a literal above is an error, a computed value is lowered at the bridge).

Marks that depend on the operation (`schedule.manage` `list`, `memory.access` `read`/`list` are
Read/R1, the rest Write/R3) take the worst case when the operation is not a literal (or not a
valid one). `channel.send` needs `channel.send:<channelId>` when the channel is a literal, else
`channel.send:*`. Host tools take the run input limit, 64 KiB.
"""

from __future__ import annotations

from forgec.catalog.base import CapabilitySpec, Catalog, spec_of
from forgec.catalog.talos import SPECS as TALOS_SPECS
from forgec.ir.capabilities import (
    CHANNEL_NAME_MAX,
    HOST_TOOL_LIMIT,
    check_channel_name,
    check_headers,
    check_prompt_file,
    rows_of,
)

HOST_SPECS: tuple[CapabilitySpec, ...] = tuple(
    spec_of(row) for row in rows_of("talon") if "talos" not in row.targets
)
SPECS = (*TALOS_SPECS, *HOST_SPECS)
CATALOG = Catalog(name="talon", capabilities={spec.name: spec for spec in SPECS})

__all__ = [
    "CATALOG",
    "CHANNEL_NAME_MAX",
    "HOST_SPECS",
    "HOST_TOOL_LIMIT",
    "SPECS",
    "check_channel_name",
    "check_headers",
    "check_prompt_file",
]
