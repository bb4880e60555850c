# ruff: noqa: UP031  (templates spell `{{name}}`: %-formatting reads better than doubled braces)
"""Adversarial pairs of versions within the limits (64 top-level nodes, 16 per loop body, a
64 KiB manifest) for the verdict's bound (SPEC §16: 2 s and 512 MiB; docs/analysis.md "The
verdict"). Each family gives (v1, v2): v2 changes what every step does, so every step is a
gain and the witness runs too.
"""

from __future__ import annotations

import copy
from typing import Any

INPUT = {
    "type": "object",
    "properties": {
        **{f"c{i}": {"type": "boolean"} for i in range(32)},
        "ids": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
        "s": {"type": "string", "enum": ["a", "b", "c", "d"]},
    },
}


def base(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schema": "talos.local-tool.v1",
        "id": "verdict.worst",
        "version": 1,
        "title": "Verdict worst case",
        "description": "Adversarial for the verdict.",
        "createdAt": "2026-12-01T09:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": INPUT,
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 256, "nodes": nodes},
    }


def _note(nid: str, title: Any, nxt: str | None) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": nid,
        "type": "capability",
        "capability": "notes.create",
        "input": {"title": title, "body": "b"},
    }
    if nxt:
        node["next"] = nxt
    return node


def diamonds(tag: str) -> dict[str, Any]:
    """20 branch diamonds in a row, each arm giving a variable another value (no two paths
    hold the same values: 2^20 paths), then a step that reads every variable."""
    nodes: list[dict[str, Any]] = []
    k = 20
    for i in range(k):
        nxt = f"j{i}"
        nodes.append(
            {
                "id": f"if{i}",
                "type": "if",
                "condition": {"op": "truthy", "left": {"$ref": f"input.c{i}"}},
                "then": f"a{i}",
                "else": f"b{i}",
            }
        )
        nodes.append(
            {"id": f"a{i}", "type": "set", "target": f"x{i}", "value": f"{tag}a", "next": nxt}
        )
        nodes.append(
            {"id": f"b{i}", "type": "set", "target": f"x{i}", "value": f"{tag}b", "next": nxt}
        )
    # each join is the next diamond's `if`: rename the joins
    for node in nodes:
        if node.get("next", "").startswith("j"):
            i = int(node["next"][1:])
            node["next"] = f"if{i + 1}" if i + 1 < k else "use"
    template = "".join("{{x%d}}" % i for i in range(k))
    nodes.append(_note("use", {"$template": template}, "done"))
    nodes.append({"id": "done", "type": "return", "value": {"ok": True}})
    return base(nodes)


def loops(tag: str) -> dict[str, Any]:
    """Three loops of 16 body steps (the node limit is 64, bodies included), each body a chain
    of conditions on the item and writes of it."""
    nodes: list[dict[str, Any]] = []
    for i in range(3):
        body = []
        for j in range(16):
            if j % 2 == 0:
                body.append(
                    {
                        "id": f"l{i}c{j}",
                        "type": "if",
                        "condition": {"op": "eq", "left": {"$ref": "item"}, "right": f"{tag}{j}"},
                        "then": f"l{i}w{j + 1}",
                        "else": f"l{i}w{j + 1}",
                    }
                )
            else:
                body.append(
                    _note(
                        f"l{i}w{j}",
                        {"$template": "%s{{item}}" % tag},
                        f"l{i}c{j + 1}" if j < 15 else None,
                    )
                )
        nodes.append(
            {
                "id": f"l{i}",
                "type": "foreach",
                "source": {"$ref": "input.ids"},
                "itemVar": "item",
                "maxItems": 16,
                "body": body,
                "next": f"l{i + 1}" if i < 2 else "done",
            }
        )
    nodes.append({"id": "done", "type": "return", "value": {"ok": True}})
    return base(nodes)


def doubling(tag: str) -> dict[str, Any]:
    """A value that doubles 60 times (a tree of 2^60 leaves, 60 shared terms) read by a step."""
    nodes: list[dict[str, Any]] = [
        {"id": "s0", "type": "set", "target": "x", "value": tag, "next": "s1"}
    ]
    for i in range(1, 62):  # 64 nodes with the step and the return
        nodes.append(
            {
                "id": f"s{i}",
                "type": "set",
                "target": "x",
                "value": [{"$ref": "x"}, {"$ref": "x"}],
                "next": f"s{i + 1}",
            }
        )
    nodes.append(_note("s62", {"$ref": "x"}, "done"))
    nodes.append({"id": "done", "type": "return", "value": {"ok": True}})
    return base(nodes)


def wide(tag: str) -> dict[str, Any]:
    """63 steps with large literal inputs, near the 64 KiB manifest limit."""
    big = tag + "x" * 900
    nodes = [_note(f"n{i}", f"t{i}", f"n{i + 1}" if i < 62 else "done") for i in range(63)]
    for node in nodes:
        node["input"]["body"] = big
    nodes.append({"id": "done", "type": "return", "value": {"ok": True}})
    return base(nodes)


def ladder(tag: str) -> dict[str, Any]:
    """63 reads of one capability and query, each with its own `limit` (63 nested
    neighbourhoods for the count matching, issue 31); the second version asks two of them for
    the widest, one more than the first has."""
    limits = list(range(1, 64)) if tag == "p" else [*range(2, 64), 63]
    nodes: list[dict[str, Any]] = [
        {
            "id": f"n{i}",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"query": "open", "limit": limit},
            "target": f"t{i}",
            "next": f"n{i + 1}" if i < 62 else "done",
        }
        for i, limit in enumerate(limits)
    ]
    nodes.append({"id": "done", "type": "return", "value": {"ok": True}})
    return base(nodes)


FAMILIES = {
    "diamonds": diamonds,
    "loops": loops,
    "doubling": doubling,
    "wide": wide,
    "ladder": ladder,
}


def pair(family: str) -> tuple[dict[str, Any], dict[str, Any]]:
    make = FAMILIES[family]
    v1 = make("p")
    v2 = copy.deepcopy(make("q"))
    v2["version"] = 2
    return v1, v2


def blocks(kinds: list[tuple[str, int]], tag: str) -> dict[str, Any]:
    """A flow of blocks (a diamond setting a variable, a loop of k body steps with conditions
    on the item, a write reading every variable so far), cut to the 64-node limit."""
    nodes: list[dict[str, Any]] = []
    made: list[str] = []
    budget = 62
    for b, (kind, k) in enumerate(kinds):
        if kind == "diamond" and budget >= 3:
            nodes += [
                {
                    "id": f"i{b}",
                    "type": "if",
                    "condition": {"op": "truthy", "left": {"$ref": f"input.c{b % 32}"}},
                    "then": f"a{b}",
                    "else": f"e{b}",
                },
                {"id": f"a{b}", "type": "set", "target": f"v{b}", "value": f"{tag}{b}a"},
                {"id": f"e{b}", "type": "set", "target": f"v{b}", "value": f"{tag}{b}b"},
            ]
            made.append(f"v{b}")
            budget -= 3
        elif kind == "loop" and budget >= 2 + k:
            body: list[dict[str, Any]] = []
            for j in range(k):
                body.append(_note(f"l{b}w{j}", {"$template": "%s{{item}}" % tag}, None))
            nodes.append(
                {
                    "id": f"l{b}",
                    "type": "foreach",
                    "source": {"$ref": "input.ids"},
                    "itemVar": "item",
                    "maxItems": 1 + k,
                    "body": body,
                }
            )
            budget -= 1 + k
        elif budget >= 1:
            parts = "".join("{{%s}}" % v for v in made[-8:]) or tag
            nodes.append(_note(f"w{b}", {"$template": tag + parts}, None))
            budget -= 1
    nodes.append({"id": "done", "type": "return", "value": {"ok": True}})
    # link: each node to the next top-level one; a diamond's arms to what follows it
    for i, node in enumerate(nodes[:-1]):
        follow = nodes[i + 1]["id"]
        if node["type"] == "if":
            continue
        if node["id"].startswith(("a", "e")) and node["type"] == "set":
            after = next(
                (n["id"] for n in nodes[i + 1 :] if not n["id"].startswith(("a", "e"))), "done"
            )
            node["next"] = after
            continue
        node["next"] = follow
        if node["type"] == "foreach":
            for x, y in zip(node["body"], node["body"][1:], strict=False):
                x["next"] = y["id"]
    return base(nodes)
