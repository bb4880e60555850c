"""Marks: what the tool may do, from its reachable steps (SPEC §6), into `ctx.facts.marks`.

Only reachable steps count: a step no run can take grants nothing (it is warned about as
`FORGE_UNREACHABLE_NODE`). For each reachable capability step of the target's catalog, the
spec's marks resolver gets the step's literal input fields and returns power, risk and Talon
label; where the deciding field (`action`, `operation`, `channelId`) is not literal, it returns
the worst case. Then:

- `powers`: the sorted set of those powers. Model steps add no power: what they need is in
  `model` (privacy, effort), and a model step by itself touches nothing outside the run.
- `risk`: the highest (R0 with no capability step); `alwaysAsks` when it is R4.
- `labels`: the sorted Talon labels (TALOS capabilities need none).
- `network`: every host of the allowlist as soon as one reachable step needs the network, none
  otherwise. It is not narrowed to the hosts of literal URLs: a request may be redirected to
  any allowlisted host (redirects are followed only within the allowlist), so each listed host
  is one the tool may reach. Deny by default: `forbidden` (or a broken `network`) gives none.
- `credentials`: the declared credential ids that reachable network steps use (a credential
  may stand nowhere else).
- `model`: the strictest privacy of the reachable model steps (local-only > local-preferred >
  remote-allowed; each step's own requirement, else `modelDefaults`), the highest reasoning
  effort, whether any asks for structured output, and how many there are; None with no model
  step. A step that states no privacy adds no requirement (None when none does).
- `capabilities`: the sorted reachable capability names.
- `compensated`: every reachable step whose power is Write declares a compensation.
- `sends` / `steered_by`: the (private → egress) and (untrusted → write/egress) pairs of the
  flow facts (SPEC §15). A tool with both always asks (`alwaysAsks`), and `asks_because`
  says why (also "R4" for a tool that asks by its risk).
"""

from __future__ import annotations

from typing import Any

from forgec.ir.marks import RISK_ORDER, Marks, ModelNeeds, risk_rank
from forgec.ir.nodes import CapabilityNode
from forgec.ir.rules import ALLOWLIST
from forgec.passes.capabilities import capability_nodes, literal_fields
from forgec.passes.context import PassContext
from forgec.passes.model import effective_structured_output, llm_nodes
from forgec.passes.references import values_of
from forgec.runtime.sources_and_sinks import is_private, is_untrusted, sink_kind

PRIVACY_STRICTNESS = ("remote-allowed", "local-preferred", "local-only")
EFFORT_ORDER = ("low", "medium", "high")


def derive_marks(ctx: PassContext) -> None:
    manifest = ctx.manifest
    flow = manifest.flow
    if flow is None:
        return
    reachable = ctx.facts.reachable_pointers
    powers: set[str] = set()
    labels: set[str] = set()
    capabilities: set[str] = set()
    risk = RISK_ORDER[0]
    compensated = True
    net_nodes: list[CapabilityNode] = []
    for node in capability_nodes(flow.nodes):
        if node.pointer not in reachable or node.capability is None:
            continue
        spec = ctx.catalog.get(node.capability)
        if spec is None:
            continue
        step = spec.step_marks(literal_fields(node.input))
        powers.add(step.power)
        if step.risk in RISK_ORDER and risk_rank(step.risk) > risk_rank(risk):
            risk = step.risk
        if step.label is not None:
            labels.add(step.label)
        capabilities.add(spec.name)
        if spec.needs_network:
            net_nodes.append(node)
        if step.power == "Write" and node.compensation is None:
            compensated = False

    network = manifest.network
    hosts: tuple[str, ...] = ()
    if net_nodes and network is not None and network.mode == ALLOWLIST:
        hosts = tuple(sorted(set(network.hosts)))

    declared = {c.id for c in manifest.credential_requirements if c.id is not None}
    # Credentials stand only in net.http headers; one anywhere else is already an error.
    used = {
        cred.id for node in net_nodes for cred, _, _ in values_of(node)[1] if cred.id in declared
    }

    # without an egress step or an outside source there are no such pairs (flows pass)
    sends, steered = flow_pairs(ctx.facts.flows) if ctx.facts.flow_warned else ((), ())
    lethal = bool(sends) and bool(steered)
    ctx.facts.marks = Marks(
        powers=tuple(sorted(powers)),
        risk=risk,
        always_asks=risk == "R4" or lethal,
        labels=tuple(sorted(labels)),
        network=hosts,
        credentials=tuple(sorted(used)),
        model=_model_needs(ctx),
        capabilities=tuple(sorted(capabilities)),
        compensated=compensated,
        sends=sends,
        steered_by=steered,
        asks_because=LETHAL_REASON if lethal else R4_REASON if risk == "R4" else None,
    )


R4_REASON = "it reaches outside this device or delegates work (R4)"
# why a tool with private data, outside text and a way out asks every run (SPEC §15)
LETHAL_REASON = (
    "it sends your private data off the device and text from outside can steer what it does"
)


def flow_pairs(
    flows: tuple[Any, ...],
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(private → egress) and (untrusted → write or egress) pairs of the flow facts."""
    sends: set[tuple[str, str]] = set()
    steered: set[tuple[str, str]] = set()
    for f in flows:
        kind = sink_kind(f.sink)
        if is_private(f.source) and kind == "egress":
            sends.add((f.source, f.sink))
        if is_untrusted(f.source) and kind in ("egress", "write"):
            steered.add((f.source, f.sink))
    return tuple(sorted(sends)), tuple(sorted(steered))


def _model_needs(ctx: PassContext) -> ModelNeeds | None:
    manifest = ctx.manifest
    assert manifest.flow is not None
    defaults = manifest.model_defaults
    steps = [n for n in llm_nodes(manifest.flow.nodes) if n.pointer in ctx.facts.reachable_pointers]
    if not steps:
        return None
    privacy: str | None = None
    effort: str | None = None
    structured = False
    for node in steps:
        req = node.requirements
        own_privacy = req.privacy if req is not None else None
        step_privacy = own_privacy or (defaults.privacy if defaults is not None else None)
        if step_privacy in PRIVACY_STRICTNESS and (
            privacy is None
            or PRIVACY_STRICTNESS.index(step_privacy) > PRIVACY_STRICTNESS.index(privacy)
        ):
            privacy = step_privacy
        own_effort = req.reasoning_effort if req is not None else None
        step_effort = own_effort or (defaults.reasoning_effort if defaults is not None else None)
        if step_effort in EFFORT_ORDER and (
            effort is None or EFFORT_ORDER.index(step_effort) > EFFORT_ORDER.index(effort)
        ):
            effort = step_effort
        structured = structured or effective_structured_output(manifest, node)[0]
    return ModelNeeds(
        privacy=privacy, reasoning_effort=effort, structured_output=structured, steps=len(steps)
    )
