"""How a TALOS step is undone (SPEC §5 pairs): which capability undoes which (from the
capability rows, `forgec.ir.capabilities`) and how a step's result gives the input of the call
that undoes it. The in-memory host (`forgec.runtime.memory_host`) and the SQLite reference host
(`forgec.host.records`) both compensate through this; it lives in the runtime because the
runtime must stand alone (no host, no catalog import), while the host may import the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forgec.ir.capabilities import rows_of

# step capability → the capability that undoes it
TALOS_UNDO: dict[str, str] = {row.name: row.undo for row in rows_of("talos") if row.undo}

__all__ = ["TALOS_UNDO", "undo_input"]


def undo_input(step_capability: str, result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The input of the `TALOS_UNDO` call that undoes a step, from the step's result: a
    created task is cancelled, a status or a note's content put back from `previousStatus` /
    `previous`. None when the result does not say what to put back (a `notes.update` result
    without a `previous` object) or the step is not a TALOS one."""
    if step_capability == "tasks.create":
        return {"id": result.get("id"), "status": "cancelled"}
    if step_capability == "tasks.setStatus":
        return {"id": result.get("id"), "status": result.get("previousStatus")}
    if step_capability == "notes.update":
        previous = result.get("previous")
        if not isinstance(previous, Mapping):
            return None
        return {
            "id": result.get("id"),
            "title": previous.get("title"),
            "body": previous.get("body"),
        }
    return None
