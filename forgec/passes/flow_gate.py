"""The flows pass (SPEC §15): whether a check runs the flow analysis (`forgec.passes.flows`)
now, leaves it to the first reader of the facts, or skips it (the graph is not well formed).

A module of its own so that a check which cannot warn (no reachable step sends anything out or
reads what others wrote: most tools) does not import the analysis, its records and the SQL
rule it reads (≈ 1.5 ms of a cold `forgec check`; docs/performance.md, "The cold check
again")."""

from __future__ import annotations

import functools
from typing import Any

from forgec.ir.nodes import CapabilityNode, nodes_of_type
from forgec.passes.context import PassContext
from forgec.runtime import sources_and_sinks as fl


def check_flows(ctx: PassContext) -> None:
    facts = ctx.facts
    flow = ctx.manifest.flow
    if flow is None or not facts.graph_ok or not facts.ordered or facts.incomplete:
        return
    if flow.entry not in facts.nodes_by_id:
        return
    if not _may_warn(ctx):
        # no step sends anything out and nothing comes from outside: no FORGEC_FLOW_* can
        # follow and the card has no Sends/Steered line, so `check` does not pay for the
        # facts; whoever reads `facts.flows` (inspect, lowering, the store) computes them.
        # What is kept for that holds no reference back to the facts (they are handed in):
        # a cycle through the context would keep the whole IR alive until the collector
        # runs, where reference counting frees it when the report is dropped
        facts.flows_pending = functools.partial(
            _deferred_flows, ctx.raw, ctx.catalog, ctx.manifest_or_none
        )
        return
    from forgec.passes.flows import analyse

    facts.flow_warned = True
    analyse(ctx)


def _deferred_flows(raw: Any, catalog: Any, manifest: Any, facts: Any) -> None:
    """The analysis `check` left to the first reader of the facts (no warnings then)."""
    from forgec.passes.flows import analyse

    ctx = PassContext(raw=raw, catalog=catalog, manifest_or_none=manifest, facts=facts)
    analyse(ctx, warn=False)


def _may_warn(ctx: PassContext) -> bool:
    """Whether a reachable step is an egress sink or an outside source (`net.http`, and the
    Talon reads of what other people wrote)."""
    reachable = ctx.facts.reachable_pointers
    return any(
        node.pointer in reachable and _outside(node.capability or "")
        for node in nodes_of_type(ctx.manifest.flow.nodes, CapabilityNode)  # type: ignore[union-attr]
    )


def _outside(name: str) -> bool:
    sink = fl.sink_of(name, None, None)
    return (
        (sink is not None and fl.sink_kind(sink) == "egress")
        or name in fl.QUERY_FIELDS
        or any(fl.is_untrusted(label) for label in fl.source_labels(name, None))
    )
