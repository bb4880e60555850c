"""The flow graph laid out for an inline SVG, from the facts `forgec graph` draws
(`forgec.render.graph.graph_parts`): the template writes the SVG, so every text in it is
escaped by Jinja and has been through safe text.

Layout: each node's row is its longest distance from the entry over the flow's forward edges
(`next`, `then`, `else`, `body`; a loop's dotted `repeat` edge goes back up and is drawn on the
side), found by relaxing every edge once per round for at most as many rounds as there are
nodes — O(nodes × edges), and a flow is at most the checker's node limit. Nodes of one row stand
side by side. A flow edge (private data to an egress, outside text to a write or an egress) is
a dashed curve on the right.
"""

from __future__ import annotations

from typing import Any

CHAR_W, LINE_H, PAD, ROW_GAP, COL_GAP, MARGIN = 7.2, 15, 8, 46, 28, 24


def layout(parts: dict[str, Any]) -> dict[str, Any]:
    nodes = parts["nodes"]
    forward = [e for e in parts["edges"] if not e["dotted"]]
    depth = {n["key"]: 0 for n in nodes}
    for _ in range(len(nodes)):
        changed = False
        for e in forward:
            if e["src"] in depth and e["dst"] in depth and depth[e["dst"]] < depth[e["src"]] + 1:
                depth[e["dst"]] = depth[e["src"]] + 1
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
        for n in rows[d]:
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
    right = width + 40
    edges = [
        _edge(boxes, e, right) for e in parts["edges"] if e["src"] in boxes and e["dst"] in boxes
    ]
    flows = [
        {**_edge(boxes, {**f, "dotted": True}, right + 30), "kind": f["kind"], "label": f["label"]}
        for f in parts["flows"]
        if f["src"] in boxes and f["dst"] in boxes
    ]
    entry = boxes.get(parts["entry"]) if parts["entry"] else None
    return {
        "width": round(right + 120),
        "height": round(y),
        "nodes": list(boxes.values()),
        "edges": edges,
        "flows": flows,
        "entry": {"x": entry["cx"], "y": entry["y"]} if entry else None,
        "margin": MARGIN,
    }


def _edge(boxes: dict[str, Any], e: dict[str, Any], right: float) -> dict[str, Any]:
    a, b = boxes[e["src"]], boxes[e["dst"]]
    if b["y"] > a["y"]:  # downwards: bottom of A to top of B
        x1, y1, x2, y2 = a["cx"], a["y"] + a["h"], b["cx"], b["y"]
        mid = (y1 + y2) / 2
        d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
        lx, ly = (x1 + x2) / 2 + 4, mid
    else:  # back up, or within a row: around the right side
        x1, y1 = a["x"] + a["w"], a["y"] + a["h"] / 2
        x2, y2 = b["x"] + b["w"], b["y"] + b["h"] / 2
        bend = max(x1, x2) + 30 + (right - max(x1, x2)) * 0.3
        d = f"M{x1:.1f},{y1:.1f} C{bend:.1f},{y1:.1f} {bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        lx, ly = bend - 10, (y1 + y2) / 2
    return {"d": d, "label": e["label"], "dotted": e["dotted"], "lx": lx, "ly": ly}
