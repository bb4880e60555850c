"""Hooks on the rows: a capability's behaviour that its row's data cannot say, by name.

Every fact about a capability is its row (`forgec.ir.capabilities`): name, shape, marks,
labels, undo pair, flow class. What needs code — how a step's result gives the input of the
call that undoes it, how the reference host undoes a Talon step from its own records — is a
hook: a function registered under a hook kind and the capability's name, in the layer that
runs it, as the host registers its handlers (`forgec.host.handlers.handles`):

    @row_hook("undo_input", "tasks.create")
    def _cancel(result): ...

`KINDS` says, from a row's data, which rows must have a hook of each kind (and no other row
may have one); `tests/test_row_hooks.py` holds the registry equal to that, and fails when a
capability's name is compared to anything outside the rows and these registrations (a
behaviour written as `if capability == "x"` somewhere is a special case a new tool would not
get). A new host tool with an undo is its row, its shape, its handler, its undo hook (beside
the handler) and its instruction file.

Plain data and a dictionary: the runtime may import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from forgec.ir.capabilities import BY_NAME, Capability

_F = TypeVar("_F", bound=Callable[..., Any])


def _talos_undo(row: Capability) -> bool:
    return row.undo is not None and "talos" in row.targets


def _talon_undo(row: Capability) -> bool:
    return row.undo is not None and "talos" not in row.targets


# kind → (what it does and where it is registered, which rows must have one)
KINDS: dict[str, tuple[str, Callable[[Capability], bool]]] = {
    "undo_input": (
        "`(step_result) -> undo input | None`: the input of the call that undoes a TALOS step, "
        "from the step's result (`forgec.runtime.undo`; both hosts compensate through it)",
        _talos_undo,
    ),
    "undo": (
        "`(call: HostCall, step_result) -> result`: the reference host undoes a Talon step "
        "from its own records (registered beside the handler, in the tool's `forgec.host` "
        "module; `call.input` is the step's input)",
        _talon_undo,
    ),
}

HOOKS: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}


def row_hook(kind: str, capability: str) -> Callable[[_F], _F]:
    """Register the decorated function as `capability`'s hook of `kind` (once)."""
    if kind not in KINDS:
        raise ValueError(f"no hook kind {kind!r} (known: {', '.join(KINDS)})")

    def register(function: _F) -> _F:
        row = BY_NAME.get(capability)
        if row is None:
            raise ValueError(f"{kind} hook for {capability!r}, which has no row")
        if not KINDS[kind][1](row):
            raise ValueError(f"{capability}'s row does not call for a {kind} hook")
        held = HOOKS[kind].get(capability)
        if held is not None and held is not function:
            raise ValueError(f"two {kind} hooks for {capability}")
        HOOKS[kind][capability] = function
        return function

    return register


def hook_of(kind: str, capability: str) -> Callable[..., Any] | None:
    """The hook of `kind` registered for `capability` (None: the row has none)."""
    return HOOKS[kind].get(capability)


def needed(row: Capability) -> frozenset[str]:
    """The hook kinds `row` must have, from its data."""
    return frozenset(kind for kind, (_, wants) in KINDS.items() if wants(row))
