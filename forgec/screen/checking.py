"""A check off the event loop, within a budget (SPEC §16): the one function the screen checks
through, so a slow or hostile file never stalls the pages of everyone else.

`check_off_loop` runs `forgec.api.check` — the function `forgec check` calls — in a worker
thread and waits at most the budget (`FORGEC_CHECK_BUDGET` seconds, default 5). Past it the
answer is `BudgetExceeded` and nothing is installed; the abandoned thread finishes on its own
(the checker's own caps bound it). When the shared budgeted check (`check_with_budget`) is in
`forgec.api`, this function is where the screen switches to it.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import anyio.to_thread

DEFAULT_BUDGET = 5.0


class BudgetExceeded(Exception):
    """The check did not finish within the budget: the file is not installed."""

    def __init__(self, budget: float) -> None:
        super().__init__(
            f"FORGEC_CHECK_BUDGET: the check took longer than {budget:g} s; nothing was installed"
        )
        self.budget = budget


def budget_seconds() -> float:
    """FORGEC_CHECK_BUDGET (seconds) when it is a positive number, else 5."""
    try:
        value = float(os.environ.get("FORGEC_CHECK_BUDGET", ""))
    except ValueError:
        return DEFAULT_BUDGET
    return value if value > 0 else DEFAULT_BUDGET


async def check_off_loop(source: bytes, *, path: str | None, target: str) -> Any:
    """`forgec.api.check(source, path=, target=)` in a worker thread, within the budget."""
    budget = budget_seconds()
    shared = _shared_budgeted_check()
    if shared is not None:
        return await anyio.to_thread.run_sync(
            lambda: shared(source, path=path, target=target, budget=budget),
            abandon_on_cancel=True,
        )
    from forgec.api import check

    with anyio.move_on_after(budget):
        return await anyio.to_thread.run_sync(
            lambda: check(source, path=path, target=target), abandon_on_cancel=True
        )
    raise BudgetExceeded(budget)


def _shared_budgeted_check() -> Any:
    """`forgec.api.check_with_budget` when this forgec has it (it returns a Report carrying
    FORGEC_CHECK_BUDGET itself), else None."""
    from forgec import api

    return getattr(api, "check_with_budget", None)
