"""The consent diff the screen shows: `forgec.store.diff.diff_versions`, what
`forgec tools diff --format json` prints, through this one function.

The shape: {"id", "from": {"version", "hash", "author"} | null, "to": {...},
"effects": {"gained": [{"kind", "text"}], "lost": [...]}, "behaviour": [{"change", "node",
"what", "old", "new", "text"}], "text": [{"field", "old", "new"}], "summary"}. A side is a
version number, or "pN" for proposal N.
"""

from __future__ import annotations

from typing import Any

Which = int | str


def consent_diff(store: Any, tool_id: str, a: Which | None, b: Which) -> dict[str, Any]:
    """What changed from A (None: nothing consented yet) to B of TOOL_ID."""
    from forgec.store.diff import diff_versions

    result: dict[str, Any] = diff_versions(store, tool_id, a, b)
    return result


def which(text: str | None) -> Which | None:
    """`3` (version 3) or `p2` (proposal 2) from a query string; None when it is neither."""
    if text is None or len(text) > 9:
        return None
    if text.isdigit():
        return int(text)
    if text.startswith("p") and text[1:].isdigit():
        return text
    return None
