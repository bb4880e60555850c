"""How a TALOS step is undone (SPEC §5 pairs): which capability undoes which (from the
capability rows, `forgec.ir.capabilities`) and how a step's result gives the input of the call
that undoes it — each row's `undo_input` hook (`forgec.ir.hooks`), registered here. The
in-memory host (`forgec.runtime.memory_host`) and the SQLite reference host
(`forgec.host.bridge`) both compensate through this; it lives in the runtime because the
runtime must stand alone (no host, no catalog import), while the host may import the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forgec.ir.capabilities import rows_of
from forgec.ir.hooks import hook_of, row_hook

# step capability → the capability that undoes it
TALOS_UNDO: dict[str, str] = {row.name: row.undo for row in rows_of("talos") if row.undo}

__all__ = ["TALOS_UNDO", "undo_input"]


def undo_input(step_capability: str, result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The input of the `TALOS_UNDO` call that undoes a step, from the step's result (its
    row's `undo_input` hook). None when the result does not say what to put back (a
    `notes.update` result without a `previous` object) or the step is not a TALOS one."""
    hook = hook_of("undo_input", step_capability)
    return hook(result) if hook is not None else None


@row_hook("undo_input", "tasks.create")
def _cancel_created(result: Mapping[str, Any]) -> dict[str, Any]:
    """A created task is cancelled."""
    return {"id": result.get("id"), "status": "cancelled"}


@row_hook("undo_input", "tasks.setStatus")
def _status_back(result: Mapping[str, Any]) -> dict[str, Any]:
    """A task's status is put back from `previousStatus`."""
    return {"id": result.get("id"), "status": result.get("previousStatus")}


@row_hook("undo_input", "notes.update")
def _content_back(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """A note's title and body are put back from `previous` (None without one)."""
    previous = result.get("previous")
    if not isinstance(previous, Mapping):
        return None
    return {"id": result.get("id"), "title": previous.get("title"), "body": previous.get("body")}
