"""Secret scanner pass (in progress: the scanner lands in the next commit).

This placeholder only exists so that `forgec.passes` imports while the scanner is written.
"""

from __future__ import annotations

from forgec.passes.context import PassContext


def check_secrets(ctx: PassContext) -> None:
    return None
