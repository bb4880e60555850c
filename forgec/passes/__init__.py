"""The checks, run from one ordered table (OPA's compile stages; STYLE habit 5).

Each pass is a function `(ctx: PassContext) -> None` that appends diagnostics and records facts
for the passes after it. Order matters: `structure` builds the IR, `graph` computes
reachability and order that `references`, `network` and `marks` read.
"""

from __future__ import annotations

from collections.abc import Callable

from forgec.passes.capabilities import check_capabilities
from forgec.passes.context import PassContext
from forgec.passes.flow_gate import check_flows
from forgec.passes.graph import check_graph
from forgec.passes.marks import derive_marks
from forgec.passes.model import check_model_steps
from forgec.passes.network import check_network
from forgec.passes.references import check_references
from forgec.passes.secrets import check_secrets
from forgec.passes.structure import check_structure

Pass = Callable[[PassContext], None]

PASSES: tuple[tuple[str, Pass], ...] = (
    ("structure", check_structure),  # shape, types, bounds; builds the IR
    ("graph", check_graph),  # entry, edges, duplicates, cycles, reachability, worst case
    ("references", check_references),  # safe targets/vars, definite assignment
    ("capabilities", check_capabilities),  # names, literal inputs, compensation
    ("model", check_model_steps),  # structured output needs a schema
    ("network", check_network),  # outbound forbidden, undeclared hosts, credentials
    ("secrets", check_secrets),  # credentials written into the file
    ("flows", check_flows),  # where data goes (SPEC §15): flow facts, FORGEC_FLOW_* warnings
    ("marks", derive_marks),  # powers, risk, labels, hosts, model needs
)


def run_passes(ctx: PassContext) -> None:
    for _name, run in PASSES:
        if run is not check_structure and ctx.manifest_or_none is None:
            return
        run(ctx)
