"""A turn's context labels (SPEC §21): what the model has read, carried by every call it makes.

The same labels as a forged tool's (SPEC §15, `forgec.runtime.flowlabels`), fed by a turn
instead of the VM:

- **seed**: the labels of what started the turn — stored with the schedule (`Work.labels`), with
  the A2A task by the sending turn, with the background task by the spawning turn;
  `external:talon` for a message from a channel (`CHANNEL_MESSAGE`). The persona's prompt,
  skills and instruction files carry none.
- **grow**: every tool result the model sees joins its labels — a host tool's source labels
  at origin (`private:<capability>`, `external:<host>` for `net.http`, `external:talon` for
  what other personas and sub-agents answer) and the stored labels of the rows it read (the
  bridge hands them back in `CallContext.read_labels`); a forged tool's output labels. The
  context only grows within a turn.
- **carry**: each call carries the whole context as data (every argument: the model wrote it)
  and as control (the model decided to call), so the bridge's `[flows] deny` check and its row
  labels (`ReferenceHost.check_flow`, `forgec.host.labels.keep`) are exactly the forged-tool
  ones; a forged tool called in a turn starts its run with the context on `input`.

A failed call joins what its failure may depend on (SPEC §15 "Failure is control"): the rows
it read and its source, unless the bridge refused it before it had any effect.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from forgec.runtime import flowlabels as fl
from forgec.runtime import labels as lb
from forgec.runtime.host import CallContext

CHANNEL_MESSAGE = (fl.TALON,)  # a turn started by a message from a channel: people wrote it
# refusals decided by the call's own labels and input, before the call had any effect
_BEFORE_EFFECT = frozenset({"RUN_FLOW_DENIED", "RUN_LABEL_DENIED"})


class TurnLabels:
    """The context labels of one turn (only grows)."""

    __slots__ = ("labels",)

    def __init__(self, seed: Iterable[str] = ()) -> None:
        self.labels: set[str] = {x for x in seed if isinstance(x, str)}

    def sorted(self) -> tuple[str, ...]:
        return tuple(sorted(self.labels))

    def join(self, labels: Iterable[str]) -> frozenset[str]:
        """Add LABELS (`input` stays inside the tool that had it); return what was new."""
        new = frozenset(x for x in labels if x != fl.INPUT) - self.labels
        self.labels |= new
        return new

    def call_context(
        self, node_id: str, input: Any, allowed_hosts: tuple[str, ...] = ()
    ) -> CallContext:
        """The bridge's view of one call the model makes: the context's labels on every
        argument (data) and as the call's control labels."""
        carried = frozenset(self.labels)
        return CallContext(
            tool_id="talond",
            tool_version=1,
            node_id=node_id,
            allowed_hosts=allowed_hosts,
            labels=lb.per_argument(input, (carried, None)),
            control_labels=tuple(sorted(carried)),
        )

    def after_host_call(
        self, capability: str, input: Any, context: CallContext, error: str | None = None
    ) -> frozenset[str]:
        """Join what a host tool's result carries (or, for ERROR, the code of a failed call:
        what its failure may depend on); return what was new."""
        if error in _BEFORE_EFFECT:
            return frozenset()
        host = (
            fl.host_of_url(input.get("url"))
            if capability == fl.HTTP and type(input) is dict
            else None
        )
        return self.join(fl.source_labels(capability, host) | context.read_labels)


def forged_failure_labels(marks: Any) -> frozenset[str]:
    """What a failed forged tool's error may carry: every source its reachable steps have
    (its run's labels are lost with the failure, so the widest of them)."""
    out: set[str] = set()
    for capability in getattr(marks, "capabilities", ()) or ():
        if capability == fl.HTTP:
            hosts = getattr(marks, "network", ()) or ("*",)
            out.update(f"external:{h}" for h in hosts)
        else:
            out.update(fl.source_labels(capability, None))
    return frozenset(out)
