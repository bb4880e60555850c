"""The embeddable runtime: `Program`, the bounded VM (`run`) and the host protocol.

Importing it pulls in neither lark nor the compiler (frontend, passes, backend, catalogs): an
embedder can load a stored Program from JSON and run it with this package alone.

    from forgec.runtime import Program, run
    from forgec.runtime.memory_host import MemoryHost
    result = run(Program.from_json(data), {"days": 3}, host=MemoryHost(), consent=lambda r: True)
    result.to_json()  # {"status", "output", "error", "transitions", "compensations"}
"""

from __future__ import annotations

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
