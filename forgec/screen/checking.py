"""A check off the event loop, within a budget (SPEC §16): the one function the screen checks
through, so a slow or hostile file never stalls the pages of everyone else.

`check_off_loop` waits, in a worker thread, on the shared budgeted check
(`forgec.budget.check_with_budget`: `forgec.check` in a worker process killed at the budget;
over it, a report whose one error is `FORGEC_CHECK_BUDGET`, which the import page shows like any
issue, and nothing installs). A forgec without that module checks in the worker thread and
stops waiting at the budget (`BudgetExceeded`); the abandoned thread ends on the checker's own
caps.
"""

from __future__ import annotations

import importlib
from typing import Any

import anyio
import anyio.to_thread

DEFAULT_BUDGET = 5.0


class BudgetExceeded(Exception):
    """The check did not finish within the budget: the file is not installed."""

    def __init__(self, budget: float) -> None:
        super().__init__(
            f"FORGEC_CHECK_BUDGET: the check did not finish within {budget:g} s "
            "(the check budget); the tool was not checked, so it cannot be installed"
        )
        self.budget = budget


async def check_off_loop(
    source: bytes, *, path: str | None, target: str, budget: float = DEFAULT_BUDGET
) -> Any:
    """`forgec.api.check(source, path=, target=)` off the event loop, within BUDGET seconds."""
    shared = _shared_budgeted_check()
    if shared is not None:
        return await anyio.to_thread.run_sync(
            lambda: shared(source, path=path, target=target, budget_s=budget),
            abandon_on_cancel=True,
        )
    from forgec.api import check

    with anyio.move_on_after(budget):
        return await anyio.to_thread.run_sync(
            lambda: check(source, path=path, target=target), abandon_on_cancel=True
        )
    raise BudgetExceeded(budget)


def _shared_budgeted_check() -> Any:
    """`forgec.budget.check_with_budget` when this forgec has it, else None."""
    try:
        module = importlib.import_module("forgec.budget")
    except ModuleNotFoundError as exc:
        if exc.name != "forgec.budget":
            raise
        return None
    return module.check_with_budget
