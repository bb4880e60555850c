"""TALOS capability facts every host shares: input size limits and task statuses (SPEC §5).

The in-memory host (`forgec.runtime.memory_host`) and the SQLite reference host
(`forgec.host.talos`) both enforce these at the bridge; one table keeps them from drifting.
It lives in the runtime because the runtime must stand alone (no host, no catalog import),
while the host may import the runtime.
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
