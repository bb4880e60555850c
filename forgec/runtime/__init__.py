"""The embeddable runtime: `Program`, the bounded VM (`run`) and the host protocol.

Importing it pulls in neither lark nor the compiler (frontend, passes, backend, catalogs): an
embedder can load a stored Program from JSON and run it with this package alone.

    from forgec.runtime import Program, run
    from forgec.runtime.memory_host import MemoryHost
    result = run(Program.from_json(data), {"days": 3}, host=MemoryHost(), consent=lambda r: True)
    result.to_json()  # {"status", "output", "error", "transitions", "compensations"}
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forgec.runtime.host import CallContext, Host, HostError
    from forgec.runtime.opcodes import OPS, Op, OperandKind
    from forgec.runtime.program import FORMAT, Program, ProgramError
    from forgec.runtime.vm import (
        CompensationOutcome,
        ConsentDenied,
        ConsentRequest,
        RunError,
        RunResult,
        consent_request,
        run,
    )

# Names are loaded on first use (PEP 562): the checker imports small leaf modules of this
# package (`sources_and_sinks`, `jsontext`, `limits`) on every check, and importing the package must
# not drag the VM in with them (~20 ms of a cold `forgec check`).
_HOMES = {
    "CallContext": "host",
    "Host": "host",
    "HostError": "host",
    "OPS": "opcodes",
    "Op": "opcodes",
    "OperandKind": "opcodes",
    "FORMAT": "program",
    "Program": "program",
    "ProgramError": "program",
    "CompensationOutcome": "vm",
    "ConsentDenied": "vm",
    "ConsentRequest": "vm",
    "RunError": "vm",
    "RunResult": "vm",
    "consent_request": "vm",
    "run": "vm",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'forgec.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"forgec.runtime.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMAT",
    "OPS",
    "CallContext",
    "CompensationOutcome",
    "ConsentDenied",
    "ConsentRequest",
    "Host",
    "HostError",
    "Op",
    "OperandKind",
    "Program",
    "ProgramError",
    "RunError",
    "RunResult",
    "consent_request",
    "run",
]
