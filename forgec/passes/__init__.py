"""The checks, run from one ordered table (OPA's compile stages; STYLE habit 5).

Each pass is a function `(ctx: PassContext) -> None` that appends diagnostics and records facts
for the passes after it. Order matters: `structure` builds the IR, `graph` computes
reachability and order that `references`, `network` and `marks` read.
"""

from __future__ import annotations

from collections.abc import Callable

from forgec.passes import (
    capabilities,
    graph,
    marks,
    model,
    network,
    references,
    secrets,
    structure,
)
from forgec.passes.context import PassContext

Pass = Callable[[PassContext], None]

PASSES: tuple[tuple[str, Pass], ...] = (
    ("structure", structure.check_structure),  # shape, types, bounds; builds the IR
    ("graph", graph.check_graph),  # entry, edges, duplicates, cycles, reachability, worst case
    ("references", references.check_references),  # safe targets/vars, definite assignment
    ("capabilities", capabilities.check_capabilities),  # names, literal inputs, compensation
    ("model", model.check_model_steps),  # structured output needs a schema
    ("network", network.check_network),  # outbound forbidden, undeclared hosts, credentials
    ("secrets", secrets.check_secrets),  # credentials written into the file
    ("marks", marks.derive_marks),  # powers, risk, labels, hosts, model needs
)


def run_passes(ctx: PassContext) -> None:
    for _name, run in PASSES:
        if run is not structure.check_structure and ctx.manifest_or_none is None:
            return
        run(ctx)
