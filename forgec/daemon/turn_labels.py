"""A turn's context labels (SPEC §21): what the model has read, carried by every call it makes.

The context is `forgec.host.agentcall.AgentContext`, the one the MCP server's sessions use too,
and every call goes through `call_as_agent`, the bridge a forged tool's step crosses (its
`[flows] deny` check and its row labels). The daemon feeds it:

- **seed**: the labels of what started the turn — stored with the schedule (`Work.labels`), with
  the A2A task by the sending turn, with the background task by the spawning turn;
  `external:talon` for a message from a channel (`CHANNEL_MESSAGE`). The persona's prompt,
  skills and instruction files carry none.
- **grow**: every tool result the model sees joins its labels (`AgentOutcome.labels`: origin
  per field and the stored labels of the rows it read; a forged tool's output labels).
- **failure is control** (SPEC §15): a failed call's error is a result too, and whether it
  failed may depend on what it reached; it joins the source labels of the call
  (`failed_call_labels`) — unless the bridge refused the call before it had any effect; a
  forged tool's run hands back `forgec.host.agentcall.forged_output_labels` (the one reading
  the MCP server uses too: of a failed run, what it held and every source its steps have).
"""

from __future__ import annotations

from typing import Any

from forgec.runtime import sources_and_sinks as fl

CHANNEL_MESSAGE = (fl.TALON,)  # a turn started by a message from a channel: people wrote it
# refusals decided by the call's own labels and input, before the call had any effect
_BEFORE_EFFECT = frozenset({"RUN_FLOW_DENIED", "RUN_LABEL_DENIED"})


def failed_call_labels(capability: str, input: Any, code: str) -> frozenset[str]:
    """What the error of a failed host-tool call carries into the model's context."""
    if code in _BEFORE_EFFECT:
        return frozenset()
    return fl.source_labels(capability, fl.call_host(capability, input))


def turn_labels(labels: Any) -> tuple[str, ...]:
    """A context's labels as stored and journaled (`input` stays inside the tool that had it)."""
    return tuple(sorted(x for x in labels if x != fl.INPUT))
