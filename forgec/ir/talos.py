"""The TALOS capability facts of SPEC §5 in the shape older readers take them: each
capability's input size limit, the task statuses, and which capability undoes which — all
derived from the rows of `forgec.ir.capabilities`, where each is spelled once.
"""

from __future__ import annotations

from forgec.ir.capabilities import TASK_STATUSES, rows_of

_ROWS = rows_of("talos")
# capability → input limit in bytes of compact UTF-8 JSON (the seed's capability table)
INPUT_LIMITS: dict[str, int] = {row.name: row.input_limit for row in _ROWS}
# step capability → the capability that undoes it
TALOS_UNDO: dict[str, str] = {row.name: row.undo for row in _ROWS if row.undo is not None}

__all__ = ["INPUT_LIMITS", "TALOS_UNDO", "TASK_STATUSES"]
