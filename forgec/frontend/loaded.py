"""What a frontend hands to the checker: the JSON document, where things were, and problems."""

from __future__ import annotations

from typing import Any

import attrs

from forgec.ir.diagnostics import Diagnostic
from forgec.ir.readable import Readable
from forgec.ir.span import SourceMap


@attrs.define(repr=False, eq=False)
class Loaded(Readable):
    # The manifest as a JSON value (for `.forge`, the compiled manifest), or None when the
    # source could not be read as one (the diagnostics say why).
    value: Any | None
    source_map: SourceMap
    diagnostics: list[Diagnostic]
    form: str  # "talostool" | "forge"
