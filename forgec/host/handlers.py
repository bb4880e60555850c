"""The registry of the reference host's capability handlers (as OPA registers its built-ins).

Each `forgec/host/<tool>.py` registers the handler of its capability with `@handles(name)`;
the bridge looks a call up here by name, so there is no dispatch chain to forget a tool in, and
a test holds the registry equal to the rows of the `talon` target.

A handler takes one `HostCall`: the capability, the input (already checked against the row's
shape at the bridge, caps applied: a handler never checks again what the shape says), the
run's `CallContext` and the host (its connection, persona, thread, configuration).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from forgec.runtime.host import CallContext

if TYPE_CHECKING:
    import sqlite3

    from forgec.host.bridge import ReferenceHost


@attrs.frozen
class HostCall:
    capability: str
    input: Mapping[str, Any]
    context: CallContext
    host: ReferenceHost

    @property
    def conn(self) -> sqlite3.Connection:
        return self.host.conn

    @property
    def persona(self) -> str:
        return self.host.persona

    @property
    def thread(self) -> str:
        return self.host.thread


Handler = Callable[[HostCall], Any]


@attrs.frozen
class Registered:
    handler: Handler
    # runs outside the host's lock: it never touches the shared connection (db.query opens
    # its own read-only one, net.http only the network), so a slow server or query never
    # holds the other callers up (each is bounded by its own time limit)
    own_connection: bool = False


HANDLERS: dict[str, Registered] = {}


def handles(capability: str, *, own_connection: bool = False) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of `capability` (once)."""

    def register(function: Handler) -> Handler:
        if capability in HANDLERS and HANDLERS[capability].handler is not function:
            raise ValueError(f"two handlers for {capability}")
        HANDLERS[capability] = Registered(function, own_connection)
        return function

    return register
