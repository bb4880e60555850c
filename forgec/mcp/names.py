"""MCP tool names for forged tools: `dynamic:<id>` ↔ `dynamic_<escaped id>`.

Internal names use a colon and dots (`dynamic:weekly.review`); MCP clients expect names of
letters, digits and underscores. A tool id (`forgec.ir.rules.TOOL_ID_PATTERN`) is lowercase only, so an
uppercase letter can never come from the id itself, and escapes built on one are unambiguous:

    .  →  _D        -  →  _H        a-z 0-9 _  →  themselves

`weekly.review` → `dynamic_weekly_Dreview`; `daily-plan_v2` → `dynamic_daily_Hplan_v2`. The
mapping is injective and `id_from_mcp_name` reverses it exactly: an `_` followed by `D` or `H`
is an escape, any other `_` is itself. Every other name (a different prefix, an uppercase letter
outside an escape, a dangling escape) is not a forged tool's name.
"""

from __future__ import annotations

from forgec.ir.rules import TOOL_ID_RE

PREFIX = "dynamic_"
MAX_MCP_NAME = 128  # the MCP specification's limit on tool names
_ESCAPE = {".": "_D", "-": "_H"}
_UNESCAPE = {"D": ".", "H": "-"}


def mcp_name(tool_id: str) -> str:
    """`weekly.review` → `dynamic_weekly_Dreview`."""
    return PREFIX + "".join(_ESCAPE.get(ch, ch) for ch in tool_id)


def id_from_mcp_name(name: str) -> str | None:
    """The tool id an MCP name stands for, or None when it is not a forged tool's name."""
    if not name.startswith(PREFIX):
        return None
    body = name[len(PREFIX) :]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "_" and i + 1 < len(body) and body[i + 1] in _UNESCAPE:
            out.append(_UNESCAPE[body[i + 1]])
            i += 2
            continue
        out.append(ch)
        i += 1
    tool_id = "".join(out)
    return tool_id if TOOL_ID_RE.fullmatch(tool_id) and mcp_name(tool_id) == name else None
