"""A call a model makes itself, through the bridge a forged tool's step crosses (SPEC §21).

Most host-tool calls are not a forged tool's steps: a persona's turn in the daemon and a
client's session over `forgec mcp serve` call the host tools directly, and what the model read
steers what it calls next. Both feed this one module, and it feeds the one mechanism forged
tools already use (SPEC §15): the `CallContext` labels, the bridge's `[flows] deny` check
(`forgec.runtime.sources_and_sinks.call_denied`) and the row labels kept beside what a call writes.

- `AgentContext` is the context's labels: `data` (what the model's arguments may hold) and
  `control` (what decided the call). It only grows: `join` adds a result's labels to both.
- `call_as_agent` hands every top-level argument the context's data labels and the call the
  context's control labels, then calls the host: a refused flow is `HostError`
  (`RUN_FLOW_DENIED`) before the call has any effect, and the rows the call writes keep the
  context's labels. It returns the result with the labels it carries (`AgentOutcome`).
- `forged_input_labels` / `forged_output_labels`: a forged tool called in a turn starts with
  the context's labels on `input` (`forgec.runtime.run(..., input_labels=...)`), and its output
  labels join the context.

The caller decides which flows its consent policy (or a person) allows for a call
(`allowed_flows`), never the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from forgec.runtime import sources_and_sinks as fl
from forgec.runtime.host import CallContext


@attrs.define
class AgentContext:
    """The labels of everything that entered a model's context (one turn, one session)."""

    data: frozenset[str] = frozenset()
    control: frozenset[str] = frozenset()

    @classmethod
    def start(cls, labels: Iterable[str] = ()) -> AgentContext:
        """A context seeded by what started it (a schedule's stored labels, a channel
        message's `external:talon`, the sending turn's labels)."""
        seed = frozenset(labels)
        return cls(data=seed, control=seed)

    def labels(self) -> frozenset[str]:
        return self.data | self.control

    def join(self, labels: Iterable[str]) -> None:
        """A result entered the context: it may feed later arguments and steer later calls."""
        more = frozenset(labels)
        if not more <= self.data:
            self.data = self.data | more
        if not more <= self.control:
            self.control = self.control | more


@attrs.frozen
class AgentOutcome:
    result: Any
    # the labels the result carries: its origin (SPEC §15 sources, §21 per field) and the
    # stored labels of the rows it read
    labels: frozenset[str]


def call_context(
    context: AgentContext,
    args: Any,
    *,
    caller: str,
    name: str,
    allowed_hosts: tuple[str, ...] = (),
    allowed_flows: Iterable[str] = (),
) -> CallContext:
    """The bridge's `CallContext` of a call the model made: every argument carries the
    context's data labels, the call its control labels."""
    data = tuple(sorted(context.data))
    if type(args) is dict:
        per_argument = {key: data for key in args} if data else {}
    else:
        per_argument = {"*": data} if data else {}
    return CallContext(
        tool_id=caller,
        tool_version=1,
        node_id=name,
        allowed_hosts=allowed_hosts,
        labels=per_argument,
        control_labels=tuple(sorted(context.control)),
        read_labels=set(),
        allowed_flows=frozenset(allowed_flows),
    )


def call_as_agent(
    host: Any,
    capability: str,
    args: Any,
    context: AgentContext,
    *,
    caller: str,
    name: str | None = None,
    allowed_hosts: tuple[str, ...] | None = None,
    allowed_flows: Iterable[str] = (),
) -> AgentOutcome:
    """Call host tool `capability` (its internal name) for a model, under `context`.

    `caller` names who asks (`talond`, `mcp`; it prefixes error messages), `name` the tool
    name the model used. `allowed_hosts` defaults to the host config's allowlist (a direct call
    has no manifest). Raises the host's `HostError` (`RUN_FLOW_DENIED`, `RUN_LABEL_DENIED`,
    …); the context is not joined here — the caller joins `outcome.labels` when the result
    enters the model's context."""
    if allowed_hosts is None:
        config = getattr(host, "config", None)
        allowed_hosts = tuple(getattr(config, "allow_hosts", ()) or ())
    ctx = call_context(
        context,
        args,
        caller=caller,
        name=name or capability,
        allowed_hosts=allowed_hosts,
        allowed_flows=allowed_flows,
    )
    result = host.call(capability, args, ctx)
    labels = fl.origin_labels(capability, args, result)
    if ctx.read_labels:
        labels = labels | frozenset(x for x in ctx.read_labels if type(x) is str)
    for extra in ctx.column_labels.values():  # the whole result enters the model's context
        labels = labels | frozenset(x for x in extra if type(x) is str)
    return AgentOutcome(result=result, labels=labels)


def forged_input_labels(context: AgentContext) -> frozenset[str]:
    """What a forged tool called in a turn starts with on `input` (beside `input` itself)."""
    return context.labels()


def forged_source_labels(marks: Any) -> frozenset[str]:
    """Every source label a forged tool's reachable steps have (its check's marks): by each
    host it may reach for a capability named by its URL (`url_field`: `net.http`; `*` when
    any host), else the capability's source label."""
    out: set[str] = set()
    for capability in getattr(marks, "capabilities", ()) or ():
        hosts: tuple[str | None, ...] = (None,)
        if fl.url_field(capability) is not None:
            hosts = tuple(getattr(marks, "network", ()) or ()) or (None,)
        for host in hosts:
            out.update(fl.source_labels(capability, host))
    return frozenset(out)


def forged_output_labels(run_result: Any, marks: Any) -> frozenset[str]:
    """The labels a forged tool's run hands back to the context that called it (a daemon's
    turn, an MCP session: both call this, so the two cannot read a run differently).

    A run that ended: its output's labels. A failed run (SPEC §15/§21 "failure is control":
    whether it failed, and its error message, may depend on anything it reached): the union
    of every label it held when it stopped (`error_labels`: its input's and the stored labels
    of the rows it read, which no static reading knows) and every source its reachable steps
    have (`forged_source_labels(marks)`: a step that failed or whose result was dropped
    leaves no held label, yet the failure may depend on it). Either alone can be fewer than
    the run could have read; the union never is — the sound reading, chosen over the two
    that were (the daemon's static sources, the MCP server's held labels). `input` stays
    inside the tool that had it (the caller's own labels came in as `input_labels`)."""
    if getattr(run_result, "ok", True):
        labels = frozenset(getattr(run_result, "output_labels", ()) or ())
    else:
        labels = frozenset(getattr(run_result, "error_labels", ()) or ())
        labels |= forged_source_labels(marks)
    return labels - {fl.INPUT}
