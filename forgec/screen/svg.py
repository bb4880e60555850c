"""The flow graph laid out for an inline SVG, from the facts `forgec graph` draws
(`forgec.render.graph.graph_parts`): the template writes the SVG, so every text in it is
escaped by Jinja and has been through safe text.

Layout: each node's row is its longest distance from the entry over the flow's forward edges
(`next`, `then`, `else`, `body`; a loop's dotted `repeat` edge goes back up and is drawn on the
side), found by relaxing every edge once per round for at most as many rounds as there are
nodes — O(nodes × edges), and a flow is at most the checker's node limit. A loop's successors
come after its whole body (each body node counts as a predecessor of them), and the body is
drawn indented inside a dashed box, as DOT draws a cluster. Nodes of one row stand side by
side. A flow edge (private data to an egress, outside text to a write or an egress) is
a dashed curve on the right.

Labels never overlap (SPEC §23): every label (a branch's `then`/`else`, a flow's source, a loop
box's name) is a box of its text's width, placed at its anchor if that spot is free of every
node and every label placed before it, else at the nearest free spot of a bounded list of
candidates below, above and to the right of the anchor (`place`); the picture grows to hold
them. The search uses a grid of cells, so each candidate looks only at the boxes near it:
O(labels × candidates × boxes per cell).

A step whose node id is in GAINED (the verdict's gains, SPEC §23) is drawn highlighted.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

CHAR_W, LINE_H, PAD, ROW_GAP, COL_GAP, MARGIN, INDENT = 7.2, 15, 8, 46, 28, 24, 36
LABEL_W, LABEL_UP, LABEL_DOWN = (
    6.8,
    12.0,
    5.0,
)  # an 11px monospace label around its baseline, a margin kept
CELL = 48.0  # the grid of `Free`


def layout(parts: dict[str, Any], *, gained: Collection[str] = ()) -> dict[str, Any]:
    nodes = parts["nodes"]
    forward = [(e["src"], e["dst"]) for e in parts["edges"] if not e["dotted"]]
    body: dict[str, list[str]] = {}
    for n in nodes:
        if n["loop"] is not None:
            body.setdefault(n["loop"], []).append(n["key"])
    # after a loop means after its body: every body node precedes the loop's successors
    forward += [
        (b, e["dst"])
        for e in parts["edges"]
        if e["src"] in body and e["label"] != "body" and not e["dotted"]
        for b in body[e["src"]]
    ]
    depth = {n["key"]: 0 for n in nodes}
    for _ in range(len(nodes)):
        changed = False
        for src, dst in forward:
            if src in depth and dst in depth and depth[dst] < depth[src] + 1:
                depth[dst] = depth[src] + 1
                changed = True
        if not changed:
            break
    rows: dict[int, list[dict[str, Any]]] = {}
    for n in nodes:
        rows.setdefault(depth[n["key"]], []).append(n)
    boxes: dict[str, dict[str, Any]] = {}
    y = MARGIN + 34.0  # room for the entry marker
    width = 0.0
    for d in sorted(rows):
        x = float(MARGIN)
        height = 0.0
        for n in sorted(rows[d], key=lambda n: n["loop"] is not None):
            if n["loop"] is not None:
                x = max(x, MARGIN + INDENT)
            w = max(len(line) for line in n["lines"] or [""]) * CHAR_W + 2 * PAD
            h = len(n["lines"]) * LINE_H + 2 * PAD
            boxes[n["key"]] = {
                **n,
                "gained": n.get("id") is not None and n.get("id") in gained,
                "x": x,
                "y": y,
                "w": w,
                "h": h,
                "cx": x + w / 2,
                "text_y": [y + PAD + LINE_H * (i + 0.8) for i in range(len(n["lines"]))],
            }
            x += w + COL_GAP
            height = max(height, h)
        width = max(width, x)
        y += height + ROW_GAP
    edges = [_edge(boxes, e) for e in parts["edges"] if e["src"] in boxes and e["dst"] in boxes]
    flows = [
        {**_around(boxes[f["src"]], boxes[f["dst"]], width + 20 + 26 * i), **f}
        for i, f in enumerate(x for x in parts["flows"] if x["src"] in boxes and x["dst"] in boxes)
    ]
    # room on the right for the side curves and their labels
    right = (
        width + 40 + 26 * len(flows) + max((len(f["label"]) + 12 for f in flows), default=0) * 6.6
    )
    clusters = []
    for loop, keys in body.items():
        inside = [boxes[k] for k in keys if k in boxes]
        if loop in boxes and inside:
            x0 = min(b["x"] for b in inside) - 12
            y0 = min(b["y"] for b in inside) - 18
            x1 = max(b["x"] + b["w"] for b in inside) + 12
            y1 = max(b["y"] + b["h"] for b in inside) + 18  # room for the label below
            label = "body of " + (boxes[loop]["lines"] or ["loop"])[0]
            clusters.append({"x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0, "label": label})
    # every label at a free spot: loop boxes' names, then branch labels, then flow labels
    free = Free()
    for b in boxes.values():
        free.take(b["x"] - 2, b["y"] - 2, b["x"] + b["w"] + 2, b["y"] + b["h"] + 2)
    for c in clusters:
        c["lx"], c["ly"] = place(free, c["x"] + 6, c["y"] + c["h"] - 4, c["label"])
    for e in edges:
        e["lx"], e["ly"] = place(free, e["lx"], e["ly"], e["label"])
    for f in flows:
        f["lx"], f["ly"] = place(free, f["lx"], f["ly"], f"{f['kind']}: {f['label']}")
    right = max(right, free.right + 20)
    y = max(y, free.bottom + 20)
    entry = boxes.get(parts["entry"]) if parts["entry"] else None
    return {
        "width": round(right + 20),
        "height": round(y),
        "gained": sum(1 for b in boxes.values() if b["gained"]),
        "nodes": list(boxes.values()),
        "edges": edges,
        "flows": flows,
        "clusters": clusters,
        "entry": {"x": entry["cx"], "y": entry["y"]} if entry else None,
        "margin": MARGIN,
    }


def _edge(boxes: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
    a, b = boxes[e["src"]], boxes[e["dst"]]
    same_column = a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
    if same_column and b["y"] - (a["y"] + a["h"]) > ROW_GAP + 1:  # past a row: on the left
        y1, y2 = a["y"] + a["h"] / 2, b["y"] + b["h"] / 2
        bend = min(a["x"], b["x"]) - 16
        d = f"M{a['x']:.1f},{y1:.1f} C{bend:.1f},{y1:.1f} {bend:.1f},{y2:.1f} {b['x']:.1f},{y2:.1f}"
        return {
            "d": d,
            "label": e["label"],
            "dotted": e["dotted"],
            "lx": bend + 2,
            "ly": (y1 + y2) / 2,
        }
    if b["y"] > a["y"]:  # downwards: bottom of A to top of B
        x1, y1, x2, y2 = a["cx"], a["y"] + a["h"], b["cx"], b["y"]
        mid = (y1 + y2) / 2
        d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
        lx, ly = (x1 + x2) / 2 + 4, mid
    else:  # back up, or within a row: around the right side
        a_side = max(a["x"] + a["w"], b["x"] + b["w"])
        return {**_around(a, b, a_side + 30), "label": e["label"], "dotted": e["dotted"]}
    return {"d": d, "label": e["label"], "dotted": e["dotted"], "lx": lx, "ly": ly}


def _around(a: dict[str, Any], b: dict[str, Any], bend: float) -> dict[str, Any]:
    """A curve from A's right side out to x = BEND and back into B's right side."""
    x1, y1 = a["x"] + a["w"], a["y"] + a["h"] / 2
    x2, y2 = b["x"] + b["w"], b["y"] + b["h"] / 2
    d = f"M{x1:.1f},{y1:.1f} C{bend:.1f},{y1:.1f} {bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    # the curve's farthest point is at 3/4 of the bend plus 1/8 of each end: its label beside it
    return {"d": d, "lx": bend * 0.75 + (x1 + x2) / 8 + 6, "ly": (y1 + y2) / 2}


class Free:
    """The boxes taken so far, in a grid of CELL-sized cells."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}
        self.right = 0.0
        self.bottom = 0.0

    @staticmethod
    def _span(x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, int]]:
        return [
            (i, j)
            for i in range(int(x0 // CELL), int(x1 // CELL) + 1)
            for j in range(int(y0 // CELL), int(y1 // CELL) + 1)
        ]

    def is_free(self, x0: float, y0: float, x1: float, y1: float) -> bool:
        return all(
            x1 <= a0 or a1 <= x0 or y1 <= b0 or b1 <= y0
            for cell in self._span(x0, y0, x1, y1)
            for a0, b0, a1, b1 in self.cells.get(cell, ())
        )

    def take(self, x0: float, y0: float, x1: float, y1: float) -> None:
        for cell in self._span(x0, y0, x1, y1):
            self.cells.setdefault(cell, []).append((x0, y0, x1, y1))
        self.right = max(self.right, x1)
        self.bottom = max(self.bottom, y1)


def label_box(x: float, y: float, text: str) -> tuple[float, float, float, float]:
    """The box a label of TEXT drawn with its baseline starting at (X, Y) covers."""
    return (x - 2, y - LABEL_UP, x + len(text) * LABEL_W + 2, y + LABEL_DOWN)


# where a label may go when its anchor is taken: down, up, right, in growing steps
_TRIES = [(0.0, 0.0)] + [
    (dx, dy)
    for step in range(1, 9)
    for dx, dy in ((0.0, 14.0 * step), (0.0, -14.0 * step), (24.0 * step, 0.0))
]


def place(free: Free, x: float, y: float, text: str) -> tuple[float, float]:
    """The first free spot for a label of TEXT near (X, Y) (its baseline start), taken; when
    every candidate is taken, a spot below everything placed (always free)."""
    for dx, dy in _TRIES:
        box = label_box(x + dx, y + dy, text)
        if box[1] >= 0 and free.is_free(*box):
            free.take(*box)
            return x + dx, y + dy
    spot_y = free.bottom + LABEL_UP + 2
    free.take(*label_box(x, spot_y, text))
    return x, spot_y
