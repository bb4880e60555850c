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
"""

from __future__ import annotations

from typing import Any

CHAR_W, LINE_H, PAD, ROW_GAP, COL_GAP, MARGIN, INDENT = 7.2, 15, 8, 46, 28, 24, 36


def layout(parts: dict[str, Any]) -> dict[str, Any]:
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
    entry = boxes.get(parts["entry"]) if parts["entry"] else None
    return {
        "width": round(right + 20),
        "height": round(y),
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
