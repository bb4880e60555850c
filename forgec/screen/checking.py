"""A check off the event loop, within a budget (SPEC §16): the one function the screen checks
through, so a slow or hostile file never stalls the pages of everyone else.

`check_off_loop` waits, in a worker thread, on the shared budgeted check
(`forgec.budget.check_with_budget`: `forgec.check` in a worker process killed at the budget).
Over the budget the report's one error is `FORGEC_CHECK_BUDGET`: the import page shows it like
any issue, and nothing installs.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread

DEFAULT_BUDGET = 5.0


async def check_off_loop(
    source: bytes, *, path: str | None, target: str, budget: float = DEFAULT_BUDGET
) -> Any:
    """`forgec.check(source, path=, target=)` in a worker process, within BUDGET seconds."""
    from forgec.budget import check_with_budget

    return await anyio.to_thread.run_sync(
        lambda: check_with_budget(source, path=path, target=target, budget_s=budget)
    )
