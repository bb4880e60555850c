"""What passes share: the manifest under check, the target catalog, diagnostics and facts.

Passes run in the order of `forgec.passes.PASSES`. Each reads the IR (and the raw JSON where it
must, e.g. the secret scanner), appends diagnostics through `report`, and records what later
passes need in `facts`. No pass raises on a bad manifest: the IR is best effort (see
`forgec.ir.nodes`) and every pass tolerates missing fields.
"""

from __future__ import annotations

from typing import Any

import attrs

from forgec.catalog import Catalog
from forgec.ir.diagnostics import Diagnostic, Fix, Related, make
from forgec.ir.marks import Marks
from forgec.ir.nodes import ForeachNode, Manifest, Node
from forgec.ir.readable import Readable


@attrs.define(repr=False, eq=False)
class LoopFacts(Readable):
    """What `forgec inspect` and the backend want to know about one `foreach`."""

    id: str
    pointer: str
    reachable: bool
    body: list[str]  # body node ids in manifest order
    item_var: str | None
    index_var: str | None
    max_items: int | None
    # SPEC §12's longest path through the body (None when cyclic or unknown) and its ids
    body_longest: int | None = None
    body_longest_path: list[str] = attrs.field(factory=list)


@attrs.define(repr=False, eq=False)
class Facts(Readable):
    """Facts passes derive for later passes, `forgec inspect` and the backend."""

    # id → node, for every node with a usable unique id (first occurrence wins)
    nodes_by_id: dict[str, Node] = attrs.field(factory=dict)
    # id → the foreach that holds it (None for top-level nodes)
    scope_of: dict[str, ForeachNode | None] = attrs.field(factory=dict)
    # ids reachable from the entry (body nodes: reachable when their loop is, from the body's
    # first node)
    reachable: set[str] = attrs.field(factory=set)
    # the flow graph is well formed (entry present, edges resolve, no cycle): lowering and the
    # definedness analysis rely on it
    graph_ok: bool = False
    # node ids in a topological order of the top-level graph (reachable nodes only)
    topo_order: list[str] = attrs.field(factory=list)
    worst_case_transitions: int | None = None
    # the longest path from the entry, as node ids (what the worst case counts)
    worst_case_path: list[str] = attrs.field(factory=list)
    marks: Marks = attrs.field(factory=Marks)
    # the entry resolves, so `reachable` means something; when False, passes that must deny by
    # default (the network pass) treat every node as possibly reachable
    reachability_known: bool = False
    # an edge or the entry names a node the IR left out (unusable id or type, already
    # reported): the flow is known only in part, so flow-sensitive checks (definedness) stand
    # down
    incomplete: bool = False
    # pointers of the reachable nodes (ids may repeat in a broken flow; pointers never do)
    reachable_pointers: set[str] = attrs.field(factory=set)
    # every cycle found, as node ids in edge order (the first id is not repeated at the end)
    cycles: list[list[str]] = attrs.field(factory=list)
    # every scope's reachable part has a topological order (`topo_order`, `body_order`)
    ordered: bool = False
    # loop id → its reachable body node ids in a topological order
    body_order: dict[str, list[str]] = attrs.field(factory=dict)
    # loop id → facts about that loop
    loops: dict[str, LoopFacts] = attrs.field(factory=dict)
    # variable → ids of the reachable nodes that write it (a `state.X` target writes `state.X`)
    writers: dict[str, list[str]] = attrs.field(factory=dict)
    # SPEC §15, from the flows pass: every (source label, sink) a run may realise, as
    # `forgec.passes.flows.Flow`s (`flows`); the joins the VM mirrors (`flow_joins`);
    # (code, pointer) → witness ids. When no flow can warn (no egress step, no outside
    # source) `check` leaves the analysis to the first reader of `flows`/`flow_joins`.
    flow_warned: bool = False  # the analysis ran during the check (a flow could warn)
    flow_witness: dict[tuple[str, str], tuple[str, ...]] = attrs.field(factory=dict)
    flows_value: tuple[Any, ...] = ()
    flow_joins_value: Any = None
    flows_pending: Any = attrs.field(default=None, repr=False)

    def _settle(self) -> None:
        pending = self.flows_pending
        if pending is not None:
            self.flows_pending = None
            pending(self)

    @property
    def flows(self) -> tuple[Any, ...]:
        self._settle()
        return self.flows_value

    @flows.setter
    def flows(self, value: tuple[Any, ...]) -> None:
        self.flows_value = value

    @property
    def flow_joins(self) -> Any:
        self._settle()
        return self.flow_joins_value

    @flow_joins.setter
    def flow_joins(self, value: Any) -> None:
        self.flow_joins_value = value


@attrs.define(repr=False, eq=False)
class PassContext(Readable):
    raw: Any  # the parsed JSON document (for .forge: the compiled manifest)
    catalog: Catalog
    # set by the structure pass (the first in the table); best effort on a broken manifest
    manifest_or_none: Manifest | None = None
    diagnostics: list[Diagnostic] = attrs.field(factory=list)
    facts: Facts = attrs.field(factory=Facts)

    def report(
        self,
        code: str,
        pointer: str,
        message: str,
        *,
        hint: str | None = None,
        notes: tuple[str, ...] | list[str] = (),
        key: bool = False,
        fixes: tuple[Fix, ...] = (),
        related: tuple[Related, ...] = (),
    ) -> None:
        self.diagnostics.append(
            make(
                code,
                pointer,
                message,
                hint=hint,
                notes=notes,
                key=key,
                fixes=fixes,
                related=related,
            )
        )

    @property
    def manifest(self) -> Manifest:
        if self.manifest_or_none is None:
            raise RuntimeError("the structure pass has not run")
        return self.manifest_or_none
