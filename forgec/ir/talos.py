"""The TALOS capability facts of SPEC §5 that more than one layer needs: each capability's input
size limit, the task statuses, and which capability undoes which.

Plain data in the shared vocabulary, so the catalog (what the compiler checks) and the hosts
(what the bridge enforces, via `forgec.runtime.talos_facts`) read one table and cannot drift;
the runtime may import it because `forgec.ir` imports nothing but attrs.
"""

from __future__ import annotations

# capability → input limit in bytes of compact UTF-8 JSON (the seed's capability table)
INPUT_LIMITS: dict[str, int] = {
    "tasks.list": 1024,
    "tasks.create": 16 * 1024,
    "tasks.setStatus": 1024,
    "notes.list": 1024,
    "notes.create": 32 * 1024,
    "notes.update": 32 * 1024,
    "memory.search": 1024,
    "memory.create": 32 * 1024,
}
TASK_STATUSES = ("open", "done", "cancelled")

# step capability → the capability that undoes it
TALOS_UNDO: dict[str, str] = {
    "tasks.create": "tasks.setStatus",
    "tasks.setStatus": "tasks.setStatus",
    "notes.update": "notes.update",
}
