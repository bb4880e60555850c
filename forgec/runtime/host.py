"""The host protocol: the one choke point between a running tool and the outside world.

Every capability call, model call, credential lookup and state read/write of a run goes through
a `Host`. The VM never touches a database, a socket or a secret itself; the host checks labels,
network allowlists and input rules again at this bridge, whatever the compiler said.

Errors: a host raises `HostError` with a `RUN_*` code; `transient=True` marks an error worth
retrying (a timeout, a busy database), which is the only kind a step's `retry` re-attempts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import attrs


class HostError(Exception):
    """A capability, model or state operation failed; `code` is a `RUN_*` code."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.transient = transient

    def __repr__(self) -> str:
        kind = "transient" if self.transient else "permanent"
        return f"HostError({self.code}, {self.message!r}, {kind})"


@attrs.frozen
class CallContext:
    """What the host needs to know about the caller to check a call at the bridge."""

    tool_id: str
    tool_version: int
    node_id: str
    # the manifest's network allowlist; () when the network is forbidden (deny by default)
    allowed_hosts: tuple[str, ...] = ()
    # declared credential id → the hosts it may be sent to
    credential_hosts: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    attempt: int = 1  # 1-based, for retries
    # SPEC §15: the labels of the call's data, per top-level input key ("*" when the input is
    # not an object), and the labels of the conditions and loops that decided the call runs.
    # Defaulted, so a host written before labels existed keeps working.
    labels: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    control_labels: tuple[str, ...] = ()
    # header name → credential id, for the `{"$credential": id}` header values the checked
    # manifest wrote literally; a `$credential` object anywhere else in the input is data
    credential_headers: Mapping[str, str] = attrs.field(factory=dict)
    # SPEC §15 "Labels persist": the host adds here the stored labels of every row (task,
    # note, memory item, message, …) the call read; the VM adds them to the result's labels.
    # Mutable on purpose (the one thing a host hands back beside the result); not compared.
    read_labels: set[str] = attrs.field(factory=set, eq=False)
    # SPEC §21 "origin per field": labels that only some result columns carry (a `db.query`
    # result's `rows[*].<column>`), which the host adds here (column → labels) instead of to
    # `read_labels`; the VM keeps them on those columns. Mutable as `read_labels`; not compared.
    column_labels: dict[str, set[str]] = attrs.field(factory=dict, eq=False)
    # SPEC §21: the destination arguments whose destination the checked manifest fixed (a
    # `net.http` URL whose host is literal): their labels fill content, not where data goes
    fixed_destinations: frozenset[str] = frozenset()
    # SPEC §21 "Policy": the `[flows] deny` rules the run's caller allowed for this call (the
    # consent policy's `[[allow]] flows`, a person's answer): never set by the tool itself
    allowed_flows: frozenset[str] = frozenset()

    def all_labels(self) -> frozenset[str]:
        """Every label of the call: its arguments' and its control labels."""
        out = set(self.control_labels)
        for labels in self.labels.values():
            out.update(labels)
        return frozenset(out)


@runtime_checkable
class Host(Protocol):
    def call(self, capability: str, input: Any, context: CallContext) -> Any:
        """Run one capability with its (already evaluated) input; return its JSON result.

        `{"$credential": id}` objects in a `net.http` step's headers arrive unresolved: the
        host resolves them itself, only those `context.credential_headers` names (the
        manifest's own), and only for the credential's own hosts.
        """
        ...

    def model(
        self,
        op: str,
        input: Any,
        requirements: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None,
        context: CallContext,
    ) -> Any:
        """Answer one `llm` step (`requirements` is the effective model requirements)."""
        ...

    def has_credential(self, credential_id: str) -> bool:
        """Whether a credential is available, without revealing it (checked before a run)."""
        ...

    def load_state(self, tool_id: str) -> dict[str, Any] | None:
        """The tool's persisted state, or None when it has none yet."""
        ...

    def save_state(self, tool_id: str, state: dict[str, Any]) -> None:
        """Persist the state atomically (called only after a successful run).

        A host that keeps labels (SPEC §15: `keeps_labels = True`) is called as
        `save_state(tool_id, state, labels)` instead, `labels` mapping each field to the
        labels of its value, stored with the state in the same transaction; and
        `load_state_labels(tool_id)` returns them for the next run (a field it does not
        name carries only `private:state`)."""
        ...

    def compensate(
        self,
        capability: str,
        step_capability: str,
        step_input: Any,
        step_result: Any,
        context: CallContext,
    ) -> Any:
        """Undo one completed step by calling its compensation `capability`.

        The host, which knows what its capabilities did, derives the undo input from the
        step's input and result (e.g. `tasks.create` → `tasks.setStatus` to `cancelled`,
        `notes.update` → `notes.update` back to `previous`). Raises `HostError` on failure.
        """
        ...


@runtime_checkable
class LabelledHost(Host, Protocol):
    """A host that keeps labels with saved state (SPEC §15 "Labels persist"): the VM calls
    `save_state(tool_id, state, labels)` and `load_state_labels(tool_id)` when `keeps_labels`."""

    keeps_labels: bool

    def load_state_labels(self, tool_id: str) -> dict[str, list[str]]:
        """Each saved field → the labels of its value (a field not named: `private:state`)."""
        ...

    def save_state(
        self, tool_id: str, state: dict[str, Any], labels: Mapping[str, Any] | None = None
    ) -> None:
        """Persist the state and, when given, its labels in the same transaction."""
        ...


class ForwardingHost:
    """A host that wraps another host (`inner`) and forwards every method of the protocol
    (`Host` and `LabelledHost`) to it unless a subclass overrides it: the one place the
    forwarding is written (a staged run's host, a test case's host). `keeps_labels` is the
    inner host's, so labels are handed on only to a host that stores them."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def keeps_labels(self) -> bool:
        return bool(getattr(self.inner, "keeps_labels", False))

    def call(self, capability: str, input: Any, context: CallContext) -> Any:
        return self.inner.call(capability, input, context)

    def model(
        self,
        op: str,
        input: Any,
        requirements: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None,
        context: CallContext,
    ) -> Any:
        return self.inner.model(op, input, requirements, output_schema, context)

    def has_credential(self, credential_id: str) -> bool:
        return bool(self.inner.has_credential(credential_id))

    def load_state(self, tool_id: str) -> dict[str, Any] | None:
        return self.inner.load_state(tool_id)

    def load_state_labels(self, tool_id: str) -> dict[str, list[str]]:
        return self.inner.load_state_labels(tool_id)

    def save_state(
        self, tool_id: str, state: dict[str, Any], labels: Mapping[str, Any] | None = None
    ) -> None:
        if labels is None:
            self.inner.save_state(tool_id, state)
        else:
            self.inner.save_state(tool_id, state, labels)

    def compensate(
        self,
        capability: str,
        step_capability: str,
        step_input: Any,
        step_result: Any,
        context: CallContext,
    ) -> Any:
        return self.inner.compensate(capability, step_capability, step_input, step_result, context)
