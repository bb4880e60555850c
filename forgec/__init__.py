"""forgec: check, compile, lower and run forged tools (`.talostool` manifests and `.forge` text).

The public API is re-exported lazily so that `import forgec` (and `forgec --help`) costs almost
nothing; `forgec.runtime` is importable on its own, without the compiler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_API = {
    "check",
    "check_file",
    "compile_dsl",
    "disassemble",
    "format_dsl",
    "lower",
    "canonical_text",
    "CheckError",
    "Report",
}

if TYPE_CHECKING:
    from forgec.api import (
        CheckError,
        Report,
        canonical_text,
        check,
        check_file,
        compile_dsl,
        disassemble,
        format_dsl,
        lower,
    )


def __getattr__(name: str) -> Any:
    if name in _API:
        from forgec import api

        return getattr(api, name)
    raise AttributeError(f"module 'forgec' has no attribute {name!r}")


__all__ = [
    "CheckError",
    "Report",
    "__version__",
    "canonical_text",
    "check",
    "check_file",
    "compile_dsl",
    "disassemble",
    "format_dsl",
    "lower",
]
