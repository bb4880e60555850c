"""Structure and bounds: the manifest's shape, types, constants and per-field codes.

Builds the IR (see `forgec.frontend.build`) and reports every shape problem on the way.
"""

from __future__ import annotations

from forgec.frontend.build import build_manifest
from forgec.passes.context import PassContext


def check_structure(ctx: PassContext) -> None:
    manifest, diagnostics = build_manifest(ctx.raw)
    ctx.manifest_or_none = manifest
    ctx.diagnostics.extend(diagnostics)
